/** Test bytes that start as a PNG does (its 8-byte signature), the rest a fixed pattern: what a photo of `size` bytes passes as. */
export function pngBytes(size: number, seed = 1): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed * 17 + (i >> 8)) & 255;
  b.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0);
  return b;
}
