// The JSON encoding of the protocol (text frames, the default) and the
// binary values of bodies both encodings share (docs/PROTOCOL.md "Binary
// encoding: MessagePack"): {"$bin": "<standard base64, padded>"}, which a
// MessagePack connection carries as `bin`. MessagePack itself is in
// msgpack_codec.js, loaded only by a client made with `encoding: 'msgpack'`,
// so that a JSON client needs no package (a browser loads src/ as it is).
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_VALUE = new Int16Array(128).fill(-1);
for (let k = 0; k < 64; k++) B64_VALUE[B64.charCodeAt(k)] = k;

/** Standard padded base64 of `bytes` (a Uint8Array). */
export function toBase64(bytes) {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63];
  }
  if (i + 1 === bytes.length) {
    const n = bytes[i] << 16;
    out += `${B64[n >> 18]}${B64[(n >> 12) & 63]}==`;
  } else if (i + 2 === bytes.length) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += `${B64[n >> 18]}${B64[(n >> 12) & 63]}${B64[(n >> 6) & 63]}=`;
  }
  return out;
}

/** The bytes of strictly canonical, padded standard base64, or null. */
export function fromCanonicalBase64(s) {
  if (typeof s !== 'string' || s.length % 4 !== 0) return null;
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((s.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < s.length; i += 4) {
    const last = i + 4 === s.length;
    let n = 0;
    for (let k = 0; k < 4; k++) {
      const c = s.charCodeAt(i + k);
      let v;
      if (c === 61 && last && k >= 4 - pad) v = 0; // '='
      else {
        v = c < 128 ? B64_VALUE[c] : -1;
        if (v < 0) return null;
      }
      n = (n << 6) | v;
    }
    // Bits the padding leaves over must be zero, else two texts name one value.
    if (last && ((pad === 1 && (n & 0xff)) || (pad === 2 && (n & 0xffff)))) return null;
    out[o++] = n >> 16;
    if (!last || pad < 2) out[o++] = (n >> 8) & 0xff;
    if (!last || pad < 1) out[o++] = n & 0xff;
  }
  return out;
}

/** {"$bin": base64}: a binary value of a body, the same in either encoding. */
export function bin(bytes) {
  return { $bin: toBase64(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)) };
}

/** The bytes of a {"$bin": canonical base64} value, or null for anything else. */
export function binBytes(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === '$bin' ? fromCanonicalBase64(value.$bin) : null;
}

export const jsonCodec = {
  name: 'json',
  binary: false,
  subprotocol: null,
  encode: (frame) => JSON.stringify(frame),
  decode(data) {
    if (typeof data !== 'string') throw new Error('a binary frame on a JSON connection');
    return JSON.parse(data);
  },
};


/** The codec of `encoding`, or a promise of it (MessagePack is loaded on first use). */
export function codecFor(encoding) {
  if (encoding === undefined || encoding === 'json') return jsonCodec;
  if (encoding === 'msgpack') return import('./msgpack_codec.js').then((m) => m.msgpackCodec);
  throw new TypeError(`ParleyClient: encoding is 'json' or 'msgpack', not ${encoding}`);
}
