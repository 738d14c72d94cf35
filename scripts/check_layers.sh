#!/usr/bin/env bash
# Fails when the folders of src/ stop telling the truth about the architecture:
# - a folder includes a folder that sits below it in the layer order of
#   docs/architecture.md (the arrows of the tree run one way);
# - a file includes headers of a folder its CMake target does not link, directly
#   or through a PUBLIC/INTERFACE link of what it links (CMake's own rule for
#   usage requirements): every target sees all of src/ on its include path, so
#   only this check notices a dependency the build files do not declare;
# - a library of a folder links a library of a folder above it;
# - a .cc file of src/ is built by no target of its folder's CMakeLists.txt;
# - code outside src/cluster/ knows how nodes talk: it includes a cluster
#   implementation's header (cluster/valkey_*.h; only server/, which wires a
#   deployment, may), or sends a feed subscription ("SSUBSCRIBE" in its code).
# Reads the sources and the CMakeLists.txt files only (no configured build).
set -euo pipefail
cd "$(dirname "$0")/.."

# Lower layers first. A folder may include itself and any folder before it.
layers=(common protocol auth tenant runtime store cluster seqlog metrics net hub events session persist upstream hooks api server)

exec python3 - "${layers[@]}" <<'PY'
import os, re, sys

layers = sys.argv[1:]
rank = {name: i for i, name in enumerate(layers)}
bad = []

# --- CMake: targets, their sources and their links -------------------------
# The CMakeLists.txt files here use add_library/add_executable(name sources...)
# and target_link_libraries(name [PUBLIC|PRIVATE|INTERFACE] deps...); a command's
# arguments hold no parentheses (${VAR} and $<...> do not nest them here).
command = re.compile(r'\b(add_library|add_executable|target_link_libraries|target_sources)\s*\(([^()]*)\)',
                     re.S)
keywords = {'STATIC', 'SHARED', 'MODULE', 'OBJECT', 'INTERFACE', 'EXCLUDE_FROM_ALL', 'ALIAS',
            'IMPORTED', 'GLOBAL', 'PUBLIC', 'PRIVATE'}
sources = {}   # target -> set of source paths (relative to the repository)
home = {}      # target -> folder of the CMakeLists.txt that defines it
libraries = set()
links = {}     # target -> list of (visibility, dep)


def strip_comments(text):
    out = []
    for line in text.splitlines():
        quoted = False
        for i, c in enumerate(line):
            if c == '"':
                quoted = not quoted
            elif c == '#' and not quoted:
                line = line[:i]
                break
        out.append(line)
    return '\n'.join(out)


def parse(cmake_file):
    folder = os.path.dirname(cmake_file)
    text = strip_comments(open(cmake_file, encoding='utf-8').read())
    for cmd, args in command.findall(text):
        words = args.split()
        if not words:
            continue
        name, rest = words[0], words[1:]
        if cmd in ('add_library', 'add_executable', 'target_sources'):
            if cmd != 'target_sources':
                home[name] = folder
            if cmd == 'add_library':
                libraries.add(name)
            srcs = sources.setdefault(name, set())
            for w in rest:
                if w in keywords or '$' in w:
                    continue
                srcs.add(os.path.normpath(os.path.join(folder, w)))
        else:
            vis = 'PUBLIC'  # the plain signature propagates like PUBLIC
            for w in rest:
                if w in ('PUBLIC', 'PRIVATE', 'INTERFACE', 'LINK_PUBLIC', 'LINK_PRIVATE'):
                    vis = 'PRIVATE' if w in ('PRIVATE', 'LINK_PRIVATE') else 'PUBLIC'
                elif '$' not in w:
                    links.setdefault(name, []).append((vis, w))


cmake_files = []
for top in ('src', 'tests'):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        if 'CMakeLists.txt' in filenames:
            cmake_files.append(os.path.join(dirpath, 'CMakeLists.txt'))
for f in cmake_files:
    parse(f)

interface_memo = {}


def interface(target):
    """What linking `target` passes on: its PUBLIC/INTERFACE deps, transitively."""
    if target not in interface_memo:
        interface_memo[target] = set()  # a cycle ends here
        out = set()
        for vis, dep in links.get(target, []):
            if vis == 'PUBLIC':
                out.add(dep)
                out |= interface(dep)
        interface_memo[target] = out
    return interface_memo[target]


def reach(target):
    """Every target whose headers `target`'s own sources may include."""
    out = set()
    for _, dep in links.get(target, []):
        out.add(dep)
        out |= interface(dep)
    return out


def src_folder(path):
    parts = path.split(os.sep)
    return parts[1] if len(parts) > 2 and parts[0] == 'src' else None


# The libraries a folder offers: those defined in src/<folder>/, and for
# "support/" (tests/support) those built from tests/support sources.
offered = {}
for t in libraries:
    folder = home[t]
    f = src_folder(os.path.join(folder, 'x'))
    if f:
        offered.setdefault(f, set()).add(t)
    elif any(s.startswith(os.path.join('tests', 'support') + os.sep) for s in sources.get(t, ())):
        offered.setdefault('support', set()).add(t)
built_by = {}  # source path -> targets that compile it
for t, srcs in sources.items():
    for s in srcs:
        built_by.setdefault(s, set()).add(t)

# A target of a folder may link only libraries of its own folder or of folders
# below it.
for t, folder in home.items():
    own = src_folder(os.path.join(folder, 'x'))
    if own not in rank:
        continue
    for _, dep in links.get(t, []):
        for f, libs in offered.items():
            if dep in libs and f in rank and rank[f] > rank[own]:
                bad.append('%s/CMakeLists.txt: %s links %s, of %s/ above %s/ in the layer order'
                           % (folder, t, dep, f, own))


def owners(path, folder):
    """The targets whose sources a file is compiled into."""
    if path in built_by:
        return built_by[path]
    stem, ext = os.path.splitext(path)
    if ext == '.h':
        if stem + '.cc' in built_by:
            return built_by[stem + '.cc']
        # A header with no .cc of its own belongs to its folder's libraries.
        libs = {t for t in offered.get(folder, ()) if t in links or sources.get(t)}
        main = 'parley_' + folder
        return {main} if main in libs else libs
    return set()


include = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([a-z_]+)/', re.M)
# How nodes talk is cluster/'s: above it code sees the interfaces (cluster.h).
cluster_impl = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"(cluster/valkey_[a-z_]*\.h)"', re.M)
subscribes = re.compile(r'"(S(?:UN)?SUBSCRIBE)\b')
folders = sorted(d for d in os.listdir('src') if os.path.isdir(os.path.join('src', d)))
for folder in folders:
    if folder not in rank:
        bad.append('src/%s is not in the layer list of scripts/check_layers.sh' % folder)
        continue
    for dirpath, dirnames, filenames in os.walk(os.path.join('src', folder)):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(('.h', '.cc')):
                continue
            path = os.path.join(dirpath, name)
            text = open(path, encoding='utf-8').read()
            targets = owners(path, folder)
            if name.endswith('.cc') and not targets:
                bad.append('%s is built by no target of src/%s/CMakeLists.txt' % (path, folder))
            if folder != 'cluster':
                for m in cluster_impl.finditer(text):
                    if folder != 'server':
                        bad.append('%s:%d includes %s: only cluster/ and server/ name a cluster implementation'
                                   % (path, text.count('\n', 0, m.start()) + 1, m.group(1)))
                m = subscribes.search(text)
                if m:
                    bad.append('%s:%d subscribes to a feed channel (%s): only cluster/ does'
                               % (path, text.count('\n', 0, m.start()) + 1, m.group(1)))
            for m in include.finditer(text):
                target = m.group(1)
                if target == folder:
                    continue
                line = text.count('\n', 0, m.start()) + 1
                where = '%s:%d' % (path, line)
                if target == 'support':
                    # tests/support (clients, servers for tests) is no layer of the
                    # server: only a unit test beside the code may use it.
                    if not name.endswith('_test.cc'):
                        bad.append('%s includes support/, which only a *_test.cc may use' % where)
                        continue
                elif target not in rank:
                    bad.append('%s includes %s/, which is no folder of the layer list' % (where, target))
                    continue
                elif rank[target] > rank[folder]:
                    bad.append('%s includes %s/, above %s/ in the layer order' % (where, target, folder))
                    continue
                for t in sorted(targets):
                    if not (reach(t) & offered.get(target, set())):
                        bad.append('%s includes %s/, but %s (src/%s/CMakeLists.txt) does not link %s'
                                   % (where, target, t, folder,
                                      ' or '.join(sorted(offered.get(target, {'a library of ' + target})))))

for b in bad:
    print('layers: ' + b)
if bad:
    sys.exit(1)
print('layers: %d layers, no upward include, every include linked (%d targets read)'
      % (len(layers), len(home)))
PY
