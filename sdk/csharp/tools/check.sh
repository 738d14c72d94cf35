#!/usr/bin/env bash
# Checks of the C# SDK that the compiler does not make (ctest csharp_sdk_checks):
# 1. its version is the server's (CMake's project version) in every place it is written;
# 2. every type Parley.Client.dll references is one that .NET Standard 2.0 has
#    (Mono's netstandard.dll facade forwards exactly those), so Unity can load it.
#    Debian ships no .NET Standard reference assemblies to compile against, so
#    this is checked on the compiled assembly; members added after 2.0 to a type
#    that 2.0 has are not caught here.
#   tools/check.sh <project version> <Parley.Client.dll>
set -euo pipefail
version="$1"
dll="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fail=0

check_version() { # file, pattern with the version
  if ! grep -qF "$2" "$1"; then
    echo "version: $1 does not say $2 (the server is $version)"
    fail=1
  fi
}
check_version "$here/package/package.json" "\"version\": \"$version\""
check_version "$here/package/Runtime/SdkVersion.cs" "Value = \"$version\""
check_version "$here/package/Runtime/AssemblyInfo.cs" "AssemblyVersion(\"$version\")"
check_version "$here/package/Runtime/AssemblyInfo.cs" "AssemblyInformationalVersion(\"$version\")"

facade=/usr/lib/mono/4.7.1-api/Facades/netstandard.dll
if ! command -v ikdasm >/dev/null || [[ ! -f $facade ]]; then
  echo "netstandard: ikdasm or $facade missing (mono-devel): cannot check"
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ikdasm "$facade" | sed -n 's/^\.class extern forwarder \(.*\)$/\1/p' | sort -u >"$tmp/allowed"
# Types named with an external assembly: [mscorlib]System.X, [System]System.Net..., nested as A/B.
ikdasm "$dll" | grep -oE '\[(mscorlib|System|System\.Core|netstandard)\][A-Za-z0-9_.`]+' \
  | sed 's/^\[[^]]*\]//' | sort -u >"$tmp/used"
[[ -s $tmp/used ]] || { echo "netstandard: no type references read from $dll"; exit 1; }
extra="$(comm -23 "$tmp/used" "$tmp/allowed")"
if [[ -n $extra ]]; then
  echo "netstandard: Parley.Client uses types that .NET Standard 2.0 does not have:"
  echo "$extra"
  fail=1
fi
assemblies="$(ikdasm "$dll" | sed -n 's/^\.assembly extern \(.*\)$/\1/p' | tr '\n' ' ')"
for a in $assemblies; do
  case "$a" in
    mscorlib | System | System.Core | netstandard) ;;
    *) echo "netstandard: Parley.Client references assembly $a, outside what this check covers"; fail=1 ;;
  esac
done
echo "checked $(wc -l <"$tmp/used") referenced types against .NET Standard 2.0; assemblies: $assemblies"
# 3. the WebGL bridge's jslib is valid JavaScript once Unity's makeDynCall macro
#    is expanded (as Emscripten does: a call of the function pointer).
jslib="$here/package/Runtime/Plugins/WebGL/ParleySocket.jslib"
if command -v node >/dev/null; then
  sed -E "s/\{\{\{ makeDynCall\('[a-z]+', '([A-Za-z]+)'\) \}\}\}/getWasmTableEntry(\1)/g" "$jslib" >"$tmp/jslib.js"
  if grep -q '{{{' "$tmp/jslib.js" || ! node --check "$tmp/jslib.js"; then
    echo "webgl: $jslib is not valid JavaScript after macro expansion"
    fail=1
  fi
else
  echo "webgl: node missing: the jslib was not checked"
fi
if ((fail == 0)); then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
