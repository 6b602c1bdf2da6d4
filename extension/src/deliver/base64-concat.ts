// Joins base64 pieces into one base64 body (Fetch.fulfillRequest takes the whole body at once, as base64).
//
// Theory of operation: base64 turns each 3 bytes into 4 characters, so the text of a piece that holds a multiple of
// 3 bytes (no "=" padding) is exactly its stretch of the whole body's base64: such a piece is appended as it came,
// never decoded. A piece of another length ends in a group of 1 or 2 bytes that must share its 4 characters with the
// next piece's first bytes: that remainder (at most 2 bytes) is carried, and the next piece is re-encoded behind it
// (the carry shifts its alignment). Each piece is thus handled once, as it arrives: the whole body is never decoded
// nor encoded again at the end, and what is held is the body's base64 text alone (no second copy as bytes).

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

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

/** Whether `piece` is base64 as the helper sends it (whole 4-character groups, padding only at its end). */
export function isBase64(piece: string): boolean {
  return piece.length % 4 === 0 && BASE64.test(piece);
}

export class Base64Joiner {
  private readonly parts: string[] = [];
  /** The 0–2 bytes after the last whole 3-byte group, as a binary string (one char a byte). */
  private carry = "";
  private length = 0;

  /** Bytes taken so far. */
  get bytes(): number {
    return this.length;
  }

  /** Takes the next piece; false (nothing taken) if it is not base64. */
  push(piece: string): boolean {
    if (!isBase64(piece)) return false;
    this.length += base64ByteLength(piece);
    if (this.carry === "" && !piece.endsWith("=")) {
      if (piece !== "") this.parts.push(piece);
      return true;
    }
    const bin = this.carry + atob(piece);
    const whole = bin.length - (bin.length % 3);
    if (whole > 0) this.parts.push(btoa(bin.slice(0, whole)));
    this.carry = bin.slice(whole);
    return true;
  }

  /** The whole body's base64 (padded once, at its end). The joiner can go on taking pieces after. */
  join(): string {
    const tail = this.carry === "" ? [] : [btoa(this.carry)];
    return [...this.parts, ...tail].join("");
  }

  /** Forgets everything held (the request was answered). */
  clear(): void {
    this.parts.length = 0;
    this.carry = "";
    this.length = 0;
  }
}

export function concatBase64(pieces: readonly string[]): string {
  const joiner = new Base64Joiner();
  for (const piece of pieces) if (!joiner.push(piece)) throw new Error("not base64");
  return joiner.join();
}
