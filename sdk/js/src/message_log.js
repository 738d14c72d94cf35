// MessageLog: a channel's messages by seq, with edits and deletes applied by
// the client's rule of PROTOCOL.md "Moderation: delete and edit". Feed it
// every entry a Channel delivers (`msg`, `edit`, `delete`, live or from a
// resume) and the entries of history pages, in any order of pages: applying
// an entry twice changes nothing more, an edit or delete of a message it does
// not hold changes nothing (history answers that message's current version),
// and a delete is final.
//
// Pure data; the host's JavaScript thread.

export class MessageLog {
  #bySeq = new Map();
  #max;

  /** `max`: messages kept (the oldest seqs go first). */
  constructor({ max = 10000 } = {}) {
    this.#max = max;
  }

  get size() {
    return this.#bySeq.size;
  }

  /** The message with this seq in its current version, or undefined. */
  get(seq) {
    return this.#bySeq.get(seq);
  }

  /** Every message held, oldest seq first. */
  messages() {
    return [...this.#bySeq.values()].sort((a, b) => a.seq - b.seq);
  }

  /**
   * Applies one entry; returns the message it added or changed (its current
   * version), or null when it changed nothing.
   */
  apply(entry) {
    if (entry === null || typeof entry !== 'object' || !Number.isInteger(entry.seq)) return null;
    if (entry.op === 'msg') return this.#put(entry);
    if (entry.op !== 'edit' && entry.op !== 'delete') return null;
    const held = this.#bySeq.get(entry.target);
    if (!held || held.deleted) return null;
    let next;
    if (entry.op === 'edit') {
      next = { ...held, body: entry.body, edited: entry.ts };
    } else {
      next = { ...held, deleted: true };
      delete next.body;
      delete next.edited;
    }
    this.#bySeq.set(held.seq, next);
    return next;
  }

  /** apply() of each entry of a history page (or a backfill), in order. */
  applyAll(entries) {
    for (const e of entries ?? []) this.apply(e);
  }

  #put(msg) {
    const held = this.#bySeq.get(msg.seq);
    if (held?.deleted) return null; // final: an older version read again changes nothing
    if (held && held.edited !== undefined && msg.edited === undefined) return null; // an older version
    if (held && held.edited !== undefined && msg.edited < held.edited) return null;
    this.#bySeq.set(msg.seq, msg);
    if (this.#bySeq.size > this.#max) {
      let oldest = Infinity;
      for (const s of this.#bySeq.keys()) oldest = Math.min(oldest, s);
      this.#bySeq.delete(oldest);
    }
    return msg;
  }
}
