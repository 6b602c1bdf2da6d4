// Joins base64 pieces into one base64 body (Fetch.fulfillRequest takes the whole body at once).

function decode(piece: string): Uint8Array {
  const bin = atob(piece);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** base64 of these bytes. */
export function encode(bytes: Uint8Array): string {
  let bin = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) bin += String.fromCharCode(...bytes.subarray(i, i + step));
  return btoa(bin);
}

/** Byte length of a base64 string (padding-aware). */
export function base64ByteLength(piece: string): number {
  const pad = piece.endsWith("==") ? 2 : piece.endsWith("=") ? 1 : 0;
  return (piece.length / 4) * 3 - pad;
}

export function concatBase64(pieces: readonly string[]): string {
  if (pieces.length === 0) return "";
  if (pieces.length === 1) return pieces[0] ?? "";
  // Pieces that each hold a multiple of 3 bytes (no padding) concatenate as text.
  if (pieces.slice(0, -1).every((p) => p.length % 4 === 0 && !p.endsWith("="))) return pieces.join("");
  const parts = pieces.map(decode);
  const total = parts.reduce((n, p) => n + p.length, 0);
  const all = new Uint8Array(total);
  let offset = 0;
  for (const p of parts) {
    all.set(p, offset);
    offset += p.length;
  }
  return encode(all);
}
