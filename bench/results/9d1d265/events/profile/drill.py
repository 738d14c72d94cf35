import collections,re,sys
txt=open(sys.argv[1]).read()
key=sys.argv[2]; comm=sys.argv[3] if len(sys.argv)>3 else 'parley-loop-1'
depth=int(sys.argv[4]) if len(sys.argv)>4 else 1
c=collections.Counter(); leaf=collections.Counter(); n=0
for s in txt.split('\n\n'):
    lines=[l for l in s.split('\n') if l.strip()]
    if not lines or lines[0].split()[0]!=comm: continue
    fr=[re.sub(r'\+0x[0-9a-f]+.*','',re.sub(r'^\s*[0-9a-f]+ ','',l).strip()) for l in lines[1:]]
    idx=[i for i,f in enumerate(fr) if key in f]
    if not idx: continue
    n+=1
    i=idx[-1]
    sub=fr[max(0,i-depth):i]
    c[' > '.join(x[:70] for x in reversed(sub)) or '(self)']+=1
    leaf[fr[0][:80]]+=1
print(n)
for k,v in c.most_common(25): print(v,k)
print('-- leaves')
for k,v in leaf.most_common(12): print(v,k)
