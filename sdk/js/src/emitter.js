// A minimal event emitter that runs the same in browsers and Node (no
// dependency on node:events). A listener that throws does not break the
// client: the exception is rethrown asynchronously, where the host reports it.
export class Emitter {
  #handlers = new Map();

  /** Adds a listener; returns a function that removes it. */
  on(type, fn) {
    let set = this.#handlers.get(type);
    if (!set) this.#handlers.set(type, (set = new Set()));
    set.add(fn);
    return () => this.off(type, fn);
  }

  off(type, fn) {
    this.#handlers.get(type)?.delete(fn);
  }

  once(type, fn) {
    const off = this.on(type, (...args) => {
      off();
      fn(...args);
    });
    return off;
  }

  emit(type, ...args) {
    const set = this.#handlers.get(type);
    if (!set || set.size === 0) return false;
    for (const fn of [...set]) {
      try {
        fn(...args);
      } catch (err) {
        setTimeout(() => {
          throw err;
        }, 0);
      }
    }
    return true;
  }
}
