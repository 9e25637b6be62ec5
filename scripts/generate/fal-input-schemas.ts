// `npm run fal:schemas`: regenerates test/support/fake-providers/fal-inputs.schema.json, the JSON
// Schema the fake fal server validates request bodies against. Each endpoint's schema is derived from
// fal's own released input type (@fal-ai/client src/types/endpoints.d.ts, EndpointTypeMap[id]['input'],
// which fal generates from the endpoint's OpenAPI schema): its fields, which are required, and the
// values of each enum. On top come the limits fal's schemas state that a TypeScript type cannot carry
// (`publishedLimits`, each with its source). The unit test fal-input-schemas fails when the checked-in
// document drifts from what the pinned client yields.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { falEndpoints } from '../../providers/fal/contract.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const falInputSchemasPath = join(root, 'test', 'support', 'fake-providers', 'fal-inputs.schema.json');

type JsonSchema = Record<string, unknown>;

interface Limit {
  /** JSON Schema keywords merged into the field's schema. */
  rule: JsonSchema;
  source: string;
}

const falDocs = (id: string) => `fal.ai/models/${id}/llms.txt and fal's API reference page for ${id}, read 2026-11-25`;
const openapiCited = (id: string) =>
  `fal's OpenAPI schema for ${id} (fal.ai/api/openapi/queue/openapi.json?endpoint_id=${id}) as cited in issue 30 (2026-11); no copy was reachable to re-read on 2026-11-25, and the @fal-ai/client type cannot carry a length`;
const googleVeo =
  "Google's Gemini API Veo 3.1 documentation (ai.google.dev/gemini-api/docs/video): up to three reference images, and reference-image videos are 8 s";

/** Limits of fal's published schemas beyond what the released TypeScript types express, field by field. */
export const publishedLimits: Record<string, Record<string, Limit>> = {
  'fal-ai/veo3.1/reference-to-video': {
    duration: {
      rule: { enum: ['8s'] },
      source: `${falDocs('fal-ai/veo3.1/reference-to-video')}: duration is a string whose only value is the default "8s" (the other Veo 3.1 endpoints list "4s", "6s", "8s"); ${googleVeo}`,
    },
    image_urls: { rule: { minItems: 1, maxItems: 3 }, source: `${googleVeo} (the model this endpoint runs; fal's page states no maximum of its own)` },
  },
  'fal-ai/kling-video/v3/pro/text-to-video': { prompt: { rule: { maxLength: 2500 }, source: openapiCited('fal-ai/kling-video/v3/pro/text-to-video') } },
  'fal-ai/kling-video/v3/pro/image-to-video': { prompt: { rule: { maxLength: 2500 }, source: openapiCited('fal-ai/kling-video/v3/pro/image-to-video') } },
  'fal-ai/kling-video/v2.6/pro/text-to-video': { prompt: { rule: { maxLength: 2500 }, source: openapiCited('fal-ai/kling-video/v2.6/pro/text-to-video') } },
  'fal-ai/kling-video/v2.6/pro/image-to-video': { prompt: { rule: { maxLength: 2500 }, source: openapiCited('fal-ai/kling-video/v2.6/pro/image-to-video') } },
  'fal-ai/nano-banana-2': {
    prompt: { rule: { minLength: 3 }, source: openapiCited('fal-ai/nano-banana-2') },
    num_images: { rule: { minimum: 1, maximum: 4 }, source: `${falDocs('fal-ai/nano-banana-2')}: "Range: 1 to 4"` },
  },
  'fal-ai/nano-banana-2/edit': {
    prompt: { rule: { minLength: 3 }, source: openapiCited('fal-ai/nano-banana-2/edit') },
    num_images: { rule: { minimum: 1, maximum: 4 }, source: `${falDocs('fal-ai/nano-banana-2/edit')}: "Range: 1 to 4"` },
  },
  'fal-ai/infinitalk': {
    num_frames: { rule: { minimum: 41, maximum: 721 }, source: '@fal-ai/client endpoints.d.ts infinitalkInput.num_frames: "Must be between 41 to 721"' },
  },
};

const klingTurboDurations = ['3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15'];

interface Transcribed {
  /** The fields as fal's page lists them; `sdkField` borrows a field's schema from an endpoint the client types. */
  properties: Record<string, JsonSchema | { sdkField: [string, string] }>;
  required?: string[];
  source: string;
}

/**
 * Endpoints the pinned @fal-ai/client does not type yet (providers/fal/contract.ts FalTranscribedInputs holds the
 * same as TypeScript): their input schemas transcribed from fal's own model pages.
 */
const seedance2Properties: Transcribed['properties'] = {
  prompt: { type: 'string' },
  resolution: { type: 'string', enum: ['480p', '720p'] },
  duration: { type: 'string', enum: ['auto', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15'] },
  aspect_ratio: { type: 'string', enum: ['auto', '21:9', '16:9', '4:3', '1:1', '3:4', '9:16'] },
  generate_audio: { type: 'boolean' },
  seed: { type: 'integer' },
  end_user_id: { type: 'string' },
};

const seedance2ImageProperties = (resolutions: string[]): Transcribed['properties'] => ({
  prompt: { type: 'string' },
  image_url: { type: 'string' },
  end_image_url: { type: 'string' },
  resolution: { type: 'string', enum: resolutions },
  duration: seedance2Properties.duration!,
  aspect_ratio: seedance2Properties.aspect_ratio!,
  generate_audio: { type: 'boolean' },
  seed: { type: 'integer' },
});

export const transcribedInputs: Record<string, Transcribed> = {
  'bytedance/seedance-2.0/text-to-video': {
    properties: seedance2Properties,
    required: ['prompt'],
    source:
      "fal.ai/models/bytedance/seedance-2.0/text-to-video/llms.txt, read 2026-12-02: prompt (required), resolution 480p | 720p, $0.3034 per second at 720p; the other fields as the Fast tier page, fal's Seedance 2.0 overview giving both tiers one parameter set",
  },
  'bytedance/seedance-2.0/fast/text-to-video': {
    properties: seedance2Properties,
    required: ['prompt'],
    source:
      'fal.ai/models/bytedance/seedance-2.0/fast/text-to-video/llms.txt, read 2026-12-02: prompt (required), resolution 480p | 720p, duration "auto" | "4" … "15", aspect_ratio auto | 21:9 | 16:9 | 4:3 | 1:1 | 3:4 | 9:16, generate_audio, seed, end_user_id; $0.2419 per second at 720p',
  },
  'bytedance/seedance-2.0/image-to-video': {
    properties: seedance2ImageProperties(['480p', '720p', '1080p']),
    required: ['prompt', 'image_url'],
    source:
      "fal.ai/models/bytedance/seedance-2.0/image-to-video and fal's API reference (docs/model-api-reference/video-generation-api/bytedance-seedance-2.0-image-to-video), read 2026-12-02: prompt and image_url (required), end_image_url, resolution 480p | 720p | 1080p, duration auto | 4 … 15, aspect_ratio, generate_audio, seed; $0.3024 per second at 720p",
  },
  'bytedance/seedance-2.0/fast/image-to-video': {
    properties: seedance2ImageProperties(['480p', '720p']),
    required: ['prompt', 'image_url'],
    source:
      'fal.ai/models/bytedance/seedance-2.0/fast/image-to-video, read 2026-12-02: prompt and image_url (required), end_image_url, resolution 480p | 720p, duration auto | 4 … 15, aspect_ratio auto | …, generate_audio; $0.2419 per second at 720p',
  },
  'xai/grok-imagine-video/v1.5/image-to-video': {
    properties: {
      prompt: { type: 'string' },
      image_url: { type: 'string' },
      duration: { type: 'integer', minimum: 1, maximum: 15 },
      resolution: { type: 'string', enum: ['480p', '720p'] },
    },
    required: ['prompt', 'image_url'],
    source:
      'fal.ai/models/xai/grok-imagine-video/v1.5/image-to-video/llms.txt, read 2026-12-02: prompt and image_url (required), duration integer 1 … 15 (default 6), resolution 480p | 720p (default 720p); $0.08 per second at 480p, $0.14 at 720p, $0.01 per input image',
  },
  'fal-ai/kling-video/o3/4k/text-to-video': {
    properties: {
      prompt: { type: 'string' },
      duration: { type: 'string', enum: klingTurboDurations },
      aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1'] },
      generate_audio: { type: 'boolean' },
      multi_prompt: { sdkField: ['fal-ai/kling-video/v3/pro/text-to-video', 'multi_prompt'] },
      shot_type: { type: 'string' },
    },
    source:
      'fal.ai/models/fal-ai/kling-video/o3/4k/text-to-video/llms.txt, read 2026-12-02: prompt (required unless multi_prompt), duration "3" … "15", aspect_ratio 16:9 | 9:16 | 1:1, generate_audio, multi_prompt (list<KlingV3MultiPromptElement>), shot_type; $0.42 per second, audio on or off',
  },
  'fal-ai/kling-video/v3/turbo/pro/text-to-video': {
    properties: {
      prompt: { type: 'string' },
      multi_prompt: { sdkField: ['fal-ai/kling-video/v3/pro/text-to-video', 'multi_prompt'] },
      aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1'] },
      duration: { type: 'string', enum: klingTurboDurations },
    },
    source:
      'fal.ai/models/fal-ai/kling-video/v3/turbo/pro/text-to-video/llms.txt, read 2026-11-27: prompt, multi_prompt (list<KlingV3MultiPromptElement>), aspect_ratio 16:9 | 9:16 | 1:1, duration "3" … "15"; no required field',
  },
  'fal-ai/kling-video/v3/turbo/pro/image-to-video': {
    properties: {
      prompt: { type: 'string' },
      multi_prompt: { sdkField: ['fal-ai/kling-video/v3/pro/text-to-video', 'multi_prompt'] },
      image_url: { type: 'string' },
      duration: { type: 'string', enum: klingTurboDurations },
    },
    required: ['image_url'],
    source:
      'fal.ai/models/fal-ai/kling-video/v3/turbo/pro/image-to-video/llms.txt, read 2026-11-27: prompt, multi_prompt (list<KlingV3MultiPromptElement>), image_url (required, the first frame), duration "3" … "15"',
  },
};

/** The JSON Schema of every endpoint's input, from the installed @fal-ai/client's types and `publishedLimits`. */
function falInputSchemas(): Record<string, JsonSchema> {
  const virtualFile = join(root, '__fal_inputs__.ts');
  const ids = Object.keys(falEndpoints).filter((id) => !Object.hasOwn(transcribedInputs, id));
  const text = `import type { EndpointTypeMap } from '@fal-ai/client/endpoints';\n${ids.map((id, i) => `export type I${i} = EndpointTypeMap[${JSON.stringify(id)}]['input'];`).join('\n')}\n`;
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (name === virtualFile ? ts.createSourceFile(name, text, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === virtualFile || fileExists(name);
  const program = ts.createProgram([virtualFile], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(virtualFile)!;
  const aliases = source.statements.filter(ts.isTypeAliasDeclaration);

  const out: Record<string, JsonSchema> = {};
  ids.forEach((id, i) => {
    const alias = aliases.find((a) => a.name.text === `I${i}`)!;
    const type = checker.getTypeAtLocation(alias.name);
    if (type.flags & ts.TypeFlags.Any) throw new Error(`@fal-ai/client has no input type for ${id}`);
    const schema = schemaOf(checker, type);
    for (const [field, limit] of Object.entries(publishedLimits[id] ?? {})) {
      const props = schema.properties as Record<string, JsonSchema>;
      if (!props[field]) throw new Error(`${id}: a published limit names ${field}, which fal's type lacks`);
      props[field] = { ...props[field], ...limit.rule };
    }
    out[id] = schema;
  });
  for (const [id, t] of Object.entries(transcribedInputs)) {
    if (!Object.hasOwn(falEndpoints, id)) throw new Error(`${id} is transcribed but no adapter calls it`);
    const properties = Object.fromEntries(
      Object.entries(t.properties).map(([field, p]) => {
        if (!('sdkField' in p)) return [field, p];
        const [from, name] = p.sdkField as [string, string];
        const borrowed = (out[from]?.properties as Record<string, JsonSchema> | undefined)?.[name];
        if (!borrowed) throw new Error(`${id}.${field}: ${from} has no ${name}`);
        return [field, borrowed];
      }),
    );
    out[id] = { type: 'object', properties, ...(t.required ? { required: t.required } : {}), additionalProperties: false };
  }
  return Object.fromEntries(Object.keys(falEndpoints).map((id) => [id, out[id]!]));
}

const isFileLike = (t: ts.Type) => ['Blob', 'File'].includes(t.getSymbol()?.getName() ?? '');

function schemaOf(checker: ts.TypeChecker, type: ts.Type): JsonSchema {
  if (type.isUnion()) {
    // URL fields are `string | Blob | File` in the client (it uploads files); on the wire they are strings.
    const parts = type.types.filter((t) => !isFileLike(t) && !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null)));
    if (parts.length && parts.every((t) => t.flags & ts.TypeFlags.BooleanLiteral)) return { type: 'boolean' };
    if (parts.length && parts.every((t) => t.isStringLiteral())) return { type: 'string', enum: parts.map((t) => (t as ts.StringLiteralType).value) };
    if (parts.length === 1) return schemaOf(checker, parts[0]!);
    const literals = parts.filter((t) => t.isStringLiteral()).map((t) => (t as ts.StringLiteralType).value);
    const others = parts.filter((t) => !t.isStringLiteral()).map((t) => schemaOf(checker, t));
    return { anyOf: [...others, ...(literals.length ? [{ type: 'string', enum: literals }] : [])] };
  }
  if (type.flags & ts.TypeFlags.String) return { type: 'string' };
  if (type.flags & ts.TypeFlags.Number) return { type: 'number' };
  if (type.flags & (ts.TypeFlags.Boolean | ts.TypeFlags.BooleanLiteral)) return { type: 'boolean' };
  if (type.isStringLiteral()) return { type: 'string', enum: [type.value] };
  if (type.isNumberLiteral()) return { type: 'number', enum: [type.value] };
  if (checker.isArrayType(type)) return { type: 'array', items: schemaOf(checker, checker.getTypeArguments(type as ts.TypeReference)[0]!) };
  if (type.flags & ts.TypeFlags.Object) {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const prop of checker.getPropertiesOfType(type)) {
      const propType = checker.getNonNullableType(checker.getTypeOfSymbol(prop));
      properties[prop.name] = schemaOf(checker, propType);
      if (!(prop.flags & ts.SymbolFlags.Optional)) required.push(prop.name);
    }
    // fal validates with pydantic; a field its schema lacks is refused here, so a typo cannot pass.
    return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
  }
  throw new Error(`no JSON Schema for the type ${checker.typeToString(type)}`);
}

/** The checked-in document: where it comes from, the limits added and their sources, and the schemas. */
export function falInputSchemasDocument(): JsonSchema {
  const { version } = JSON.parse(readFileSync(join(root, 'node_modules', '@fal-ai', 'client', 'package.json'), 'utf8')) as { version: string };
  return {
    $comment:
      'Generated by `npm run fal:schemas` (scripts/generate/fal-input-schemas.ts). Do not edit: the fal-input-schemas unit test fails when this file drifts.',
    source: `@fal-ai/client ${version}, src/types/endpoints.d.ts (EndpointTypeMap[endpoint].input, generated by fal from each endpoint's OpenAPI schema)`,
    generated: new Date().toISOString().slice(0, 10),
    limits: Object.fromEntries(
      Object.entries(publishedLimits).map(([id, fields]) => [
        id,
        Object.fromEntries(Object.entries(fields).map(([f, l]) => [f, { ...l.rule, source: l.source }])),
      ]),
    ),
    transcribed: Object.fromEntries(Object.entries(transcribedInputs).map(([id, t]) => [id, t.source])),
    endpoints: falInputSchemas(),
  };
}

function main() {
  writeFileSync(falInputSchemasPath, `${JSON.stringify(falInputSchemasDocument(), null, 2)}\n`);
  console.log(`wrote ${falInputSchemasPath}`);
}

// Runs as `node dist/scripts/generate/fal-input-schemas.js`; the unit test only imports it.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
