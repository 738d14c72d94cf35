// The two encodings of the protocol (docs/PROTOCOL.md "Binary encoding:
// MessagePack"): JSON in text frames (the default) and MessagePack in binary
// frames (subprotocol parley.v1.msgpack), on @msgpack/msgpack. Either way the
// application sees the same bodies: a MessagePack `bin` inside a body is the
// object {"$bin": "<standard base64, padded>"} a JSON connection gets, and
// such an object (one key, canonical base64) in a body the application sends
// goes out as `bin` (so do Uint8Arrays). Malformed server input throws, and the
// client reports it as a `bad_frame` error; the bounds are the server's:
// values nest at most 1,024 deep (a scalar counting as a level), no declared
// count or length past what the frame could hold, map keys str only, no ext,
// floats finite, `bin` only inside a body.
//
// One limit of the library: strings with invalid UTF-8 decode with U+FFFD in
// place of the bad bytes (TextDecoder's default) rather than failing the frame.
import { Decoder, Encoder } from '@msgpack/msgpack';

const MAX_DEPTH = 1024;
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

// Decoders by power-of-two frame size: a declared count or length above the
// size is refused before anything is set aside for it (the library allocates
// an array of the declared count).
const decoders = new Map();
function decoderFor(size) {
  let cap = 64;
  while (cap < size) cap *= 2;
  let d = decoders.get(cap);
  if (!d) {
    d = new Decoder({
      maxStrLength: cap, maxBinLength: cap, maxArrayLength: cap, maxMapLength: cap, maxExtLength: 0,
      mapKeyConverter: (key) => {
        if (typeof key !== 'string') throw new Error('map keys must be strings');
        return key;
      },
    });
    decoders.set(cap, d);
  }
  return d;
}

const encoder = new Encoder({ ignoreUndefined: true });

// What the decoder gave, checked and with bins inside bodies as {$bin}:
// returns the value to use (the same one unless it is a bin).
function fromWire(v, depth, body) {
  if (depth > MAX_DEPTH) throw new Error('values nest too deep');
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('floats must be finite');
    return v;
  }
  if (v instanceof Uint8Array) {
    if (!body) throw new Error('bin is allowed only inside a body');
    return { $bin: toBase64(v) };
  }
  if (Array.isArray(v)) {
    for (let k = 0; k < v.length; k++) v[k] = fromWire(v[k], depth + 1, body);
    return v;
  }
  // Anything else the library makes (a Date of the timestamp ext, ExtData) is an ext.
  if (typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) throw new Error('ext values are not allowed');
  for (const k in v) v[k] = fromWire(v[k], depth + 1, body || k === 'body');
  return v;
}

// What goes on the wire for `v`: inside a body a canonical {$bin} becomes a
// Uint8Array (bin); values with toJSON (Date) become what JSON would send.
// Copies only what changes.
function toWire(v, depth, body) {
  if (depth > MAX_DEPTH) throw new Error('values nest too deep');
  if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return v;
  if (typeof v.toJSON === 'function') return toWire(v.toJSON(), depth, body);
  if (Array.isArray(v)) {
    let out = v;
    for (let k = 0; k < v.length; k++) {
      const w = toWire(v[k], depth + 1, body);
      if (w !== v[k]) {
        if (out === v) out = v.slice();
        out[k] = w;
      }
    }
    return out;
  }
  if (body) {
    const bytes = binBytes(v);
    if (bytes) return bytes;
  }
  let out = v;
  for (const k in v) {
    const w = toWire(v[k], depth + 1, body || k === 'body');
    if (w !== v[k]) {
      if (out === v) out = { ...v };
      out[k] = w;
    }
  }
  return out;
}

export const msgpackCodec = {
  name: 'msgpack',
  binary: true,
  subprotocol: 'parley.v1.msgpack',
  /** The frame as MessagePack (a Uint8Array). */
  encode: (frame) => encoder.encode(toWire(frame, 0, false)),
  /** One server frame: a map, or an array of maps. Throws on malformed input. */
  decode(data) {
    if (typeof data === 'string') throw new Error('a text frame on a MessagePack connection');
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const v = decoderFor(bytes.length).decode(bytes);
    if (v === null || typeof v !== 'object' || v instanceof Uint8Array) throw new Error('a frame is a map or an array of maps');
    if (Array.isArray(v)) {
      for (const e of v) {
        if (e === null || typeof e !== 'object' || Array.isArray(e) || e instanceof Uint8Array) {
          throw new Error('a batch holds maps only');
        }
      }
    }
    return fromWire(v, 1, false);
  },
};

export function codecFor(encoding) {
  if (encoding === undefined || encoding === 'json') return jsonCodec;
  if (encoding === 'msgpack') return msgpackCodec;
  throw new TypeError(`ParleyClient: encoding is 'json' or 'msgpack', not ${encoding}`);
}
