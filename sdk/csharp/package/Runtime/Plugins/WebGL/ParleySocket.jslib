// The browser half of WebGLTransport (Runtime/WebGLTransport.cs): a WebGL
// build has no ClientWebSocket, so the C# transport calls these through
// [DllImport("__Internal")] and they drive the browser's WebSocket. Messages
// are copied into the wasm heap for the C# callback and freed after it
// returns (the callback copies them). Unity 2021.2+ (makeDynCall).
//
// Runs on the browser's one thread, like the whole WebGL player.
var ParleySocketLib = {
  $ParleySockets: {},

  ParleyWsOpen__deps: ['$ParleySockets'],
  ParleyWsOpen: function (id, urlPtr, protocolPtr, onOpen, onMessage, onClose) {
    var ws;
    try {
      var protocol = UTF8ToString(protocolPtr);
      ws = protocol ? new WebSocket(UTF8ToString(urlPtr), [protocol]) : new WebSocket(UTF8ToString(urlPtr));
    } catch (e) {
      var why = stringToNewUTF8('bad url: ' + e.message);
      {{{ makeDynCall('viii', 'onClose') }}}(id, 1006, why);
      _free(why);
      return;
    }
    ws.binaryType = 'arraybuffer';
    ParleySockets[id] = ws;
    ws.onopen = function () {
      {{{ makeDynCall('vi', 'onOpen') }}}(id);
    };
    ws.onmessage = function (e) {
      var text = typeof e.data === 'string';
      var bytes = text ? new TextEncoder().encode(e.data) : new Uint8Array(e.data);
      var buf = _malloc(bytes.length || 1);
      HEAPU8.set(bytes, buf);
      {{{ makeDynCall('viiii', 'onMessage') }}}(id, buf, bytes.length, text ? 0 : 1);
      _free(buf);
    };
    ws.onclose = function (e) {
      if (ParleySockets[id] !== ws) return;
      delete ParleySockets[id];
      var why = stringToNewUTF8(e.reason || '');
      {{{ makeDynCall('viii', 'onClose') }}}(id, e.code || 1006, why);
      _free(why);
    };
  },

  ParleyWsSend__deps: ['$ParleySockets'],
  ParleyWsSend: function (id, ptr, len, binary) {
    var ws = ParleySockets[id];
    if (!ws || ws.readyState !== 1) return;
    var bytes = HEAPU8.slice(ptr, ptr + len);
    ws.send(binary ? bytes : new TextDecoder().decode(bytes));
  },

  // Closes and forgets the socket: no callback comes for it afterwards (the C#
  // side reports the drop itself, at once).
  ParleyWsClose__deps: ['$ParleySockets'],
  ParleyWsClose: function (id, code) {
    var ws = ParleySockets[id];
    if (!ws) return;
    delete ParleySockets[id];
    try {
      ws.close(code >= 3000 && code <= 4999 ? code : 1000);
    } catch (e) {
      // already closing
    }
  },
};
autoAddDeps(ParleySocketLib, '$ParleySockets');
mergeInto(LibraryManager.library, ParleySocketLib);
