// The assembly's identity; the version is the server's (SdkVersion.cs).
using System.Reflection;

[assembly: AssemblyTitle("Parley.Client")]
[assembly: AssemblyDescription("Client SDK for the Parley realtime messaging server (Unity and .NET)")]
[assembly: AssemblyVersion("0.1.0")]
[assembly: AssemblyInformationalVersion("0.1.0")]
// The NUnit tests (sdk/csharp/tests) check internals such as the timer heap.
[assembly: System.Runtime.CompilerServices.InternalsVisibleTo("Parley.Client.Tests")]
