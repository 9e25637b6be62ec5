// A playground input that takes files (`*_file_id`, `*_file_ids`): drop files on it or pick them
// with its file input (the keyboard's way), and each is uploaded at once — small files through the
// gateway (POST /v1/upload), large ones straight to storage with a presigned POST (client.uploadDirect),
// so their bytes never pass through a gateway. The field then holds the upload ids the create sends;
// the API's refusal of a file (its type, its size) is shown with its message.
import { useState } from 'preact/hooks';
import { client } from '../api.js';
import { failure } from '../ui.js';

/** Files above this size go straight to storage (a presigned POST) rather than through the gateway. */
const DIRECT_UPLOAD_ABOVE_BYTES = 4 * 1024 * 1024;

/** Whether a create field takes upload ids, and whether a list of them. */
export function uploadFieldOf(input: string): 'one' | 'many' | null {
  return input.endsWith('_file_ids') ? 'many' : input.endsWith('_file_id') ? 'one' : null;
}

interface Uploaded {
  id: string;
  name: string;
  direct: boolean;
}

async function upload(file: File, projectId: string): Promise<Uploaded> {
  if (file.size > DIRECT_UPLOAD_ABOVE_BYTES) {
    const done = await client.uploadDirect(file, { projectId });
    return { id: done.id, name: file.name, direct: true };
  }
  const done = await client.uploadFile(file, { projectId });
  return { id: done.id, name: file.name, direct: false };
}

export function UploadField({ name, multiple }: { name: string; multiple: boolean }) {
  const [files, setFiles] = useState<Uploaded[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [over, setOver] = useState(false);
  const label = name.replace(/_file_ids?$/, '').replace(/_/g, ' ');

  const take = async (list: FileList | null, form: HTMLFormElement | null) => {
    if (!list?.length || !form) return;
    const project = (form.elements.namedItem('project_id') as HTMLSelectElement | null)?.value ?? '';
    setBusy(true);
    setError(null);
    try {
      const picked = multiple ? [...list] : [list[0]!];
      const done = await Promise.all(picked.map((f) => upload(f, project)));
      setFiles((had) => (multiple ? [...had, ...done] : done));
      // The ids are in the hidden input once rendered: price the request again then.
      setTimeout(() => form.dispatchEvent(new Event('change', { bubbles: true })), 0);
    } catch (err) {
      setError(failure(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div
      class={`upload wide${over ? ' over' : ''}`}
      data-upload={name}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        void take(e.dataTransfer?.files ?? null, (e.currentTarget as HTMLElement).closest('form'));
      }}
    >
      <label>
        {label} (optional): drop {multiple ? 'images' : 'a file'} here or choose
        <input
          type="file"
          accept="image/png,image/jpeg,image/webp,video/mp4,video/quicktime,video/webm"
          multiple={multiple}
          onChange={(e) => void take((e.currentTarget as HTMLInputElement).files, (e.currentTarget as HTMLInputElement).form)}
        />
      </label>
      <input type="hidden" name={name} value={files.map((f) => f.id).join(',')} />
      <p aria-live="polite">{busy ? 'Uploading…' : files.map((f) => `${f.name} → ${f.id}${f.direct ? ' (straight to storage)' : ''}`).join(', ')}</p>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </div>
  );
}
