// The SDK's version: the server's (the top-level CMakeLists.txt project
// version). package.json carries the same number; sdk/csharp/CMakeLists.txt
// checks that they agree.
namespace Parley
{
    internal static class SdkVersion
    {
        internal const string Value = "0.1.0";
    }
}
