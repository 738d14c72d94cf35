// Reconnect and retry delays. Jitter spreads a crowd of clients that lost the
// same server at the same moment over the delay instead of stampeding back.
// Pure functions: any thread.
using System;

namespace Parley
{
    /// <summary>Reconnect backoff: the delay before attempt n is drawn from [cap/2, cap].</summary>
    public sealed class ReconnectOptions
    {
        /// <summary>The first delay's cap, ms (default 250).</summary>
        public int MinMs = 250;
        /// <summary>The largest cap, ms (default 15000).</summary>
        public int MaxMs = 15000;
        /// <summary>Growth of the cap per failed attempt (default 2).</summary>
        public double Factor = 2;
    }

    /// <summary>The delay formulas (the same as the JavaScript SDK's).</summary>
    public static class Backoff
    {
        /// <summary>
        /// Exponential backoff with "equal jitter": for <paramref name="attempt"/> (0-based),
        /// cap = min(MaxMs, MinMs * Factor^attempt), delay uniform in [cap/2, cap].
        /// </summary>
        public static int Delay(int attempt, ReconnectOptions o, Random random)
        {
            double cap = Math.Min(o.MaxMs, o.MinMs * Math.Pow(o.Factor, Math.Min(attempt, 30)));
            return (int)Math.Round(cap / 2 + random.NextDouble() * cap / 2);
        }

        /// <summary><paramref name="ms"/> stretched by up to <paramref name="fraction"/> of itself: a server-given delay is a floor.</summary>
        public static int WithJitter(int ms, double fraction, Random random)
        {
            return (int)Math.Round(ms + random.NextDouble() * ms * fraction);
        }
    }
}
