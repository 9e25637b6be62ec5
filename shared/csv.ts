// CSV as RFC 4180 has it: CRLF line ends, a field quoted when it holds a comma, a double quote, CR
// or LF, and a double quote inside a quoted field doubled.
function csvField(value: string | number): string {
  const s = String(value);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** The lines of `rows`, each ending with CRLF. */
export function csvDocument(rows: (string | number)[][]): string {
  return rows.map((r) => `${r.map(csvField).join(',')}\r\n`).join('');
}
