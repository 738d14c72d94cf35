// parley-bot: a headless client, the way a game server's bot or a load test
// uses the SDK. It joins a channel, publishes --count messages, and runs until
// it has seen --expect messages of that channel (its own included) and every
// publish is acknowledged; it then prints a one-line JSON summary and exits 0
// (1 on a timeout or a failed publish, 2 on bad arguments). Delivery is
// checked as it goes: seqs must rise by one. --since 0 reads the channel from
// its start (so bots started apart still see each other's every message).
//
// One thread: the main loop calls Poll and waits for work in between.
//
//   mono parley-bot.exe --url ws://127.0.0.1:7700/v1/ws --token JWT --channel chat:bots --count 100
using System;
using System.Collections.Generic;
using Parley;

internal static class Bot
{
    private static int Main(string[] args)
    {
        var a = new Dictionary<string, string>();
        for (int i = 0; i + 1 < args.Length; i += 2) a[args[i].TrimStart('-')] = args[i + 1];
        string url, token;
        if (!a.TryGetValue("url", out url) || !a.TryGetValue("token", out token))
        {
            Console.Error.WriteLine("usage: parley-bot --url ws://host:port/v1/ws --token JWT [--channel chat:bots] " +
                                    "[--count 100] [--expect N] [--since SEQ] [--timeout-s 30]");
            return 2;
        }
        string chName = a.ContainsKey("channel") ? a["channel"] : "chat:bots";
        int count = a.ContainsKey("count") ? int.Parse(a["count"]) : 100;
        int expect = a.ContainsKey("expect") ? int.Parse(a["expect"]) : count;
        int timeoutS = a.ContainsKey("timeout-s") ? int.Parse(a["timeout-s"]) : 30;
        long? since = a.ContainsKey("since") ? (long?)long.Parse(a["since"]) : null;

        var client = new ParleyClient(new ClientOptions { Url = url, Token = token });
        var ch = client.Channel(chName);
        long received = 0, acked = 0, failed = 0, lastSeq = -1, outOfOrder = 0, fromMe = 0;
        string me = null;
        client.Opened += w => me = w.User;
        client.Disconnected += d => Console.Error.WriteLine("bot: disconnected " + d.Code + " " + d.Reason);
        ch.MessageReceived += m =>
        {
            if (lastSeq >= 0 && m.Seq != lastSeq + 1) outOfOrder++;
            lastSeq = m.Seq;
            received++;
            if (m.From == me) fromMe++;
        };
        bool started = false;
        ch.Join(since).ContinueWith(t =>
        {
            if (t.IsFaulted)
            {
                Console.Error.WriteLine("bot: join failed: " + t.Exception.GetBaseException().Message);
                failed++;
                return;
            }
            started = true;
            for (int i = 0; i < count; i++)
            {
                var body = JsonValue.Object().Set("bot", me).Set("i", i);
                ch.Publish(body).ContinueWith(p =>
                {
                    if (p.IsFaulted)
                    {
                        failed++;
                        Console.Error.WriteLine("bot: publish failed: " + p.Exception.GetBaseException().Message);
                    }
                    else acked++;
                }, System.Threading.Tasks.TaskContinuationOptions.ExecuteSynchronously);
            }
        }, System.Threading.Tasks.TaskContinuationOptions.ExecuteSynchronously);

        var deadline = DateTime.UtcNow.AddSeconds(timeoutS);
        while (DateTime.UtcNow < deadline && failed == 0)
        {
            client.Poll();
            if (started && acked == count && received >= expect) break;
            client.WaitForWork(100);
        }
        bool ok = failed == 0 && acked == count && received >= expect && outOfOrder == 0;
        Console.WriteLine(JsonValue.Object().Set("ok", ok).Set("user", me).Set("published", acked)
            .Set("failed", failed).Set("received", received).Set("from_me", fromMe)
            .Set("out_of_order", outOfOrder).Set("last_seq", lastSeq));
        client.Close();
        client.Poll();
        return ok ? 0 : 1;
    }
}
