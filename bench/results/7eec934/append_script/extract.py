# Prints the kAppend Lua source of a scripts.cc read from stdin.
import re, sys
print(re.search(r'kAppend = R"lua\((.*?)\)lua"', sys.stdin.read(), re.S).group(1))
