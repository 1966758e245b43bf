// Byte lanes (D-314): a segment's index file is mostly arrays of 32-bit numbers (document numbers
// in ascending runs, offsets), whose high bytes are nearly all alike and whose low bytes vary.
// Regrouped per 1 MB block into four lanes (every word's first byte, then every second byte, and
// so on) before zstd, the index of a 1M-record version compressed to 27 MB instead of 97 MB, for
// NATS to store three times and serve to every other node; the regrouping costs about 0.1 s.
import { Transform, type TransformCallback } from "node:stream";

/** Blocks are regrouped on their own, counted from the start of the stream (a part of a file). */
export const LANE_BLOCK = 1 << 20;

/** Full blocks are read as 32-bit words, whose byte order is the machine's. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Full blocks: four 32-bit lanes per step (the block's words are a multiple of 4, aligned). */
function toLanesFull(src: Uint8Array, dst: Uint8Array): void {
  const words = src.length >>> 2;
  const lane = words >>> 2;
  const u = new Uint32Array(src.buffer, src.byteOffset, words);
  const o = new Uint32Array(dst.buffer, dst.byteOffset, words);
  for (let i = 0, k = 0; k < lane; i += 4, k++) {
    const a = u[i]!;
    const b = u[i + 1]!;
    const c = u[i + 2]!;
    const d = u[i + 3]!;
    o[k] = (a & 0xff) | ((b & 0xff) << 8) | ((c & 0xff) << 16) | ((d & 0xff) << 24);
    o[lane + k] = ((a >>> 8) & 0xff) | (b & 0xff00) | ((c & 0xff00) << 8) | ((d & 0xff00) << 16);
    o[2 * lane + k] = ((a >>> 16) & 0xff) | ((b >>> 8) & 0xff00) | (c & 0xff0000) | ((d & 0xff0000) << 8);
    o[3 * lane + k] = (a >>> 24) | ((b >>> 16) & 0xff00) | ((c >>> 8) & 0xff0000) | (d & 0xff000000);
  }
}

function fromLanesFull(src: Uint8Array, dst: Uint8Array): void {
  const words = src.length >>> 2;
  const lane = words >>> 2;
  const s = new Uint32Array(src.buffer, src.byteOffset, words);
  const u = new Uint32Array(dst.buffer, dst.byteOffset, words);
  for (let i = 0, k = 0; k < lane; i += 4, k++) {
    const w0 = s[k]!;
    const w1 = s[lane + k]!;
    const w2 = s[2 * lane + k]!;
    const w3 = s[3 * lane + k]!;
    u[i] = (w0 & 0xff) | ((w1 & 0xff) << 8) | ((w2 & 0xff) << 16) | ((w3 & 0xff) << 24);
    u[i + 1] = ((w0 >>> 8) & 0xff) | (w1 & 0xff00) | ((w2 & 0xff00) << 8) | ((w3 & 0xff00) << 16);
    u[i + 2] = ((w0 >>> 16) & 0xff) | ((w1 >>> 8) & 0xff00) | (w2 & 0xff0000) | ((w3 & 0xff0000) << 8);
    u[i + 3] = (w0 >>> 24) | ((w1 >>> 16) & 0xff00) | ((w2 >>> 8) & 0xff0000) | (w3 & 0xff000000);
  }
}

/**
 * One block into lanes: byte j of word i goes to `j * words + i`; bytes after the last whole
 * word stay at the end. The same bytes on every machine: a big-endian one takes the byte loop.
 */
export function toLanes(src: Uint8Array, dst: Uint8Array): void {
  if (src.length === LANE_BLOCK && LITTLE_ENDIAN) {
    toLanesFull(src, dst);
    return;
  }
  const words = src.length >>> 2;
  for (let i = 0; i < words; i++) for (let j = 0; j < 4; j++) dst[j * words + i] = src[4 * i + j]!;
  for (let k = 4 * words; k < src.length; k++) dst[k] = src[k]!;
}

/** The inverse of toLanes. */
export function fromLanes(src: Uint8Array, dst: Uint8Array): void {
  if (src.length === LANE_BLOCK && LITTLE_ENDIAN) {
    fromLanesFull(src, dst);
    return;
  }
  const words = src.length >>> 2;
  for (let i = 0; i < words; i++) for (let j = 0; j < 4; j++) dst[4 * i + j] = src[j * words + i]!;
  for (let k = 4 * words; k < src.length; k++) dst[k] = src[k]!;
}

/** A stream that regroups (or restores) each block of LANE_BLOCK bytes as it fills. */
function laneStream(regroup: (src: Uint8Array, dst: Uint8Array) => void): Transform {
  // Its own buffer, so that whole blocks are aligned for the 32-bit views.
  const block = new Uint8Array(LANE_BLOCK);
  let filled = 0;
  const emit = (stream: Transform, length: number) => {
    // Not from the shared pool (aligned), and not zero-filled: every byte is written.
    const out = Buffer.allocUnsafeSlow(length);
    regroup(block.subarray(0, length), out);
    stream.push(out);
    filled = 0;
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      let at = 0;
      while (at < chunk.length) {
        const take = Math.min(LANE_BLOCK - filled, chunk.length - at);
        block.set(chunk.subarray(at, at + take), filled);
        filled += take;
        at += take;
        if (filled === LANE_BLOCK) emit(this, LANE_BLOCK);
      }
      done();
    },
    flush(done: TransformCallback) {
      if (filled > 0) emit(this, filled);
      done();
    },
  });
}

export const intoLanes = (): Transform => laneStream(toLanes);
export const outOfLanes = (): Transform => laneStream(fromLanes);
