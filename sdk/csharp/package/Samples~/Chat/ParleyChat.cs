// A MonoBehaviour that chats on a channel and streams its position. Add it to
// a GameObject, set the URL and a token (minted by your backend), press Play.
// The client's callbacks run inside Poll(), which Update() calls, so they are
// on Unity's main thread and may touch the scene.
using Parley;
using UnityEngine;

public class ParleyChat : MonoBehaviour
{
    [SerializeField] private string url = "ws://127.0.0.1:7700/v1/ws";
    [SerializeField] private string token = "";
    [SerializeField] private string channelName = "chat:lobby";
    [SerializeField] private string worldChannel = "world:7";

    private ParleyClient _client;
    private Channel _room;
    private Channel _world;
    private float _nextState;

    private void Start()
    {
        _client = new ParleyClient(new ClientOptions
        {
            Url = url,
            Token = token, // or TokenProvider = () => FetchTokenAsync(), called before every reconnect
            OnCallbackException = Debug.LogException,
        });
        _client.Disconnected += d => Debug.LogWarning("Parley: disconnected (" + d.Code + "), again in " + d.DelayMs + " ms");

        _room = _client.Channel(channelName);
        _room.MessageReceived += m => Debug.Log(m.From + ": " + m.Body["text"]);
        _room.Gap += g => Debug.LogWarning("Parley: messages " + g.From + ".." + g.To + " are gone");
        _room.Join();

        _world = _client.Channel(worldChannel);
        _world.StateReceived += s => Debug.Log(s.From + " is at " + s.Body);
        _world.Join();
    }

    private void Update()
    {
        _client.Poll();
        if (Input.GetKeyDown(KeyCode.Space))
            _room.Publish(JsonValue.Object().Set("text", "hello from Unity"));
        if (Time.time >= _nextState)
        {
            // Latest wins: sending every 100 ms is enough; a dropped one is replaced by the next.
            _nextState = Time.time + 0.1f;
            var p = transform.position;
            _world.SetState("pos", JsonValue.Object().Set("x", p.x).Set("y", p.y).Set("z", p.z));
        }
    }

    private void OnDestroy()
    {
        if (_client != null) _client.Close();
    }
}
