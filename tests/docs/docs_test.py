#!/usr/bin/env python3
"""Docs that cannot drift (issue 22). Fails when:

- a configuration example in README.md or docs/*.md does not pass
  `parley check-config` (placeholders "..." become real values, and a tenant the
  example leaves out or leaves without its secret / api_key gets them: an example
  shows some keys, the check needs a whole file);
- README.md's folder list and the folders of src/ differ;
- README.md's configuration key list and the keys src/server/config.cc accepts
  differ;
- src/server/reload_plan.cc does not name a [server], [valkey], [postgres],
  [dynamodb] or [persist] key config.cc accepts (every such key but the live ones needs a
  restart, and a reload must say so).

Usage: docs_test.py PARLEY_BINARY SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

parley, root = sys.argv[1], sys.argv[2]
failures = []

HEADER = re.compile(r'^\s*\[((?:server|tenants|valkey|postgres|dynamodb|persist)(?:\.[A-Za-z0-9_.:@-]+)?)\]')


def code_blocks(path):
    """(first line number, text) of each indented (4 spaces) or fenced block."""
    lines = open(path, encoding='utf-8').read().split('\n')
    blocks, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('```'):
            j = i + 1
            while j < len(lines) and not lines[j].startswith('```'):
                j += 1
            blocks.append((i + 2, '\n'.join(lines[i + 1:j])))
            i = j + 1
            continue
        if line.startswith('    ') and (i == 0 or not lines[i - 1].strip()):
            j = i
            body = []
            while j < len(lines) and (lines[j].startswith('    ') or not lines[j].strip()):
                body.append(lines[j][4:])
                j += 1
            blocks.append((i + 1, '\n'.join(body).rstrip()))
            i = j
            continue
        i += 1
    return blocks


def complete(example):
    """The example as a whole file: placeholders filled, each tenant it names
    with a secret and an api_key, one tenant when it names none."""
    counter = [0]

    def fresh(m):
        counter[0] += 1
        return '%s = "docs-example-%s-%02d-0123456789abcdef"' % (m.group(1), m.group(1), counter[0])

    text = re.sub(r'^(\w+) = "\.\.\."', fresh, example, flags=re.M)
    tenants = []
    for line in text.split('\n'):
        m = HEADER.match(line)
        if m and m.group(1).startswith('tenants.'):
            t = m.group(1).split('.')[1]
            if t not in tenants:
                tenants.append(t)
    if not tenants:
        tenants = ['docs']
    out = text.split('\n')
    for t in tenants:
        head = '[tenants.%s]' % t
        at = next((i for i, l in enumerate(out) if l.split('#')[0].strip() == head), None)
        if at is None:
            out += ['', head]
            at = len(out) - 1
        end = next((i for i in range(at + 1, len(out)) if HEADER.match(out[i])), len(out))
        table = '\n'.join(out[at + 1:end])
        add = []
        if not re.search(r'^secret\s*=', table, re.M):
            add.append('secret = "docs-check-secret-%s-0123456789"' % t)
        if not re.search(r'^api_key\s*=', table, re.M):
            add.append('api_key = "docs-check-key-%s"' % t)
        out[at + 1:at + 1] = add
    return '\n'.join(out) + '\n'


docs = [os.path.join(root, 'README.md')] + sorted(
    os.path.join(root, 'docs', f) for f in os.listdir(os.path.join(root, 'docs')) if f.endswith('.md'))
checked = 0
with tempfile.TemporaryDirectory() as tmp:
    for doc in docs:
        for line_no, block in code_blocks(doc):
            if not any(HEADER.match(l) for l in block.split('\n')):
                continue
            path = os.path.join(tmp, 'example.toml')
            with open(path, 'w') as f:
                f.write(complete(block))
            r = subprocess.run([parley, 'check-config', path], capture_output=True, text=True)
            checked += 1
            if r.returncode != 0:
                failures.append('%s:%d: the example fails check-config:\n%s\n--- as checked:\n%s' %
                                (os.path.relpath(doc, root), line_no, r.stderr.strip(),
                                 open(path).read()))
print('config examples checked: %d' % checked)
if checked < 8:
    failures.append('only %d config examples found in the docs: is the extraction broken?' % checked)

readme = open(os.path.join(root, 'README.md'), encoding='utf-8').read()

# ---- folders ----
listed = set(re.findall(r'^    src/(\w+)\s', readme, re.M))
present = {d for d in os.listdir(os.path.join(root, 'src'))
           if os.path.isfile(os.path.join(root, 'src', d, 'CMakeLists.txt'))}
if listed != present:
    failures.append('README.md folder list: missing %s, not in src/ %s' %
                    (sorted(present - listed) or '-', sorted(listed - present) or '-'))

# ---- configuration keys ----
def section_of(header):
    parts = header.split('.')
    if parts[0] != 'tenants':
        return parts[0]
    if len(parts) == 2:
        return 'tenants.*'
    return 'tenants.*.%s.*' % parts[2]

config_part = readme.split('\n## Configuration\n', 1)[1].split('\n## ', 1)[0]
in_readme = set()


def keys_in(text):
    keys, section = set(), None
    for line in text.split('\n'):
        m = HEADER.match(line)
        if m:
            section = section_of(m.group(1))
            continue
        k = re.match(r'^\s*(\w+)\s*=', line)
        if k and section:
            keys.add(section + '.' + k.group(1))
    return keys


tmpfile = os.path.join(tempfile.gettempdir(), 'parley-readme-config.md')
with open(tmpfile, 'w', encoding='utf-8') as f:
    f.write(config_part)
for _, block in code_blocks(tmpfile):
    in_readme |= keys_in(block)
os.remove(tmpfile)

config_cc = open(os.path.join(root, 'src/server/config.cc'), encoding='utf-8').read()
READERS = {'read_server': 'server', 'read_valkey': 'valkey', 'read_postgres': 'postgres', 'read_dynamodb': 'dynamodb',
           'read_persist': 'persist', 'read_tenant': 'tenants.*',
           'read_namespace': 'tenants.*.namespaces.*', 'read_topic': 'tenants.*.topics.*',
           'read_leaderboard': 'tenants.*.leaderboards.*'}
SUBTABLES = {'tenants.*.topics', 'tenants.*.leaderboards', 'tenants.*.namespaces'}
accepted = set()
for m in re.finditer(r'^(?:void|Status) (read_\w+)\(.*?^\}$', config_cc, re.M | re.S):
    keys = re.findall(r'key == "(\w+)"', m.group(0))
    if m.group(1) == 'read_document':  # the sections themselves
        continue
    if keys and m.group(1) not in READERS:
        failures.append('config.cc: %s reads keys this test does not place: add it to READERS' %
                        m.group(1))
        continue
    for k in keys:
        full = READERS[m.group(1)] + '.' + k
        if full not in SUBTABLES:
            accepted.add(full)
if len(accepted) < 50:
    failures.append('only %d keys found in config.cc: is the extraction broken?' % len(accepted))
if in_readme != accepted:
    failures.append('README.md configuration keys: missing %s; not accepted by config.cc %s' %
                    (sorted(accepted - in_readme) or '-', sorted(in_readme - accepted) or '-'))
print('config keys: %d in config.cc, %d in README.md' % (len(accepted), len(in_readme)))

# ---- reload ----
LIVE = {'server.log_level'}  # docs/operations.md "Reloading the config"
plan = open(os.path.join(root, 'src/server/reload_plan.cc'), encoding='utf-8').read()
named = {'server.' + k for k in re.findall(r'server_key\("(\w+)"', plan)}
named |= {s + '.' + k for s, k in re.findall(r'start_key\("(\w+)", "(\w+)"', plan)}
for key in sorted(accepted):
    if key.split('.')[0] in ('server', 'valkey', 'postgres', 'dynamodb', 'persist'):
        if key not in named and key not in LIVE:
            failures.append('reload_plan.cc does not name %s: a reload would not list it' % key)

for f in failures:
    print('FAILED: ' + f)
sys.exit(1 if failures else 0)
