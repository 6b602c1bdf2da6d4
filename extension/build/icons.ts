// Draws the toolbar/store icons (three lanes in a rounded square) as PNG files, so no binary lives in the repo.
import { deflateSync } from "node:zlib";

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (CRC_TABLE[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "ascii");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Right ends of the three lanes (fractions of the square): staggered, like parallel transfers finishing. */
const LANES: readonly (readonly [number, number])[] = [[0.3, 0.84], [0.5, 0.7], [0.7, 0.8]];

/** Whether (u, v) lies on a lane: a bar ending in an arrowhead. */
function onLane(u: number, v: number): boolean {
  return LANES.some(([centre, tip]) => {
    const dv = Math.abs(v - centre);
    if (u > 0.16 && u < tip - 0.12) return dv < 0.045;
    return u >= tip - 0.12 && u <= tip && dv < 0.1 * ((tip - u) / 0.12);
  });
}

/** RGBA pixel of the icon at (x, y) for an icon of `size` pixels. The 128 px store icon keeps the 16 px transparent
 * margin the Chrome Web Store asks for (96 px of artwork); toolbar sizes use the whole square. */
function pixel(x: number, y: number, size: number): [number, number, number, number] {
  const pad = size >= 128 ? size / 8 : 0;
  const u = (x + 0.5 - pad) / (size - 2 * pad);
  const v = (y + 0.5 - pad) / (size - 2 * pad);
  if (u < 0 || u > 1 || v < 0 || v > 1) return [0, 0, 0, 0];
  const r = 0.2;
  const dx = Math.max(r - u, 0, u - (1 - r));
  const dy = Math.max(r - v, 0, v - (1 - r));
  if (dx * dx + dy * dy > r * r) return [0, 0, 0, 0];
  return onLane(u, v) ? [255, 255, 255, 255] : [26, 115, 232, 255];
}

export function iconPng(size: number): Buffer {
  const raw = Buffer.alloc((size * 4 + 1) * size);
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0; // filter: none
    for (let x = 0; x < size; x++) raw.set(pixel(x, y, size), y * (size * 4 + 1) + 1 + x * 4);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", new Uint8Array()),
  ]);
}
