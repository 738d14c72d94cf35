import sys, subprocess, collections, re
out = subprocess.run(["perf","script","-i",sys.argv[1],"-F","ip,sym,dso"],capture_output=True,text=True).stdout
top = collections.Counter(); leaf=collections.Counter(); n=0; nu=0
for b in out.split("\n\n"):
    lines=[l.strip() for l in b.strip().splitlines()]
    if not lines: continue
    n+=1
    if "kernel.kallsyms" in lines[0]: continue
    nu+=1
    syms=[re.sub(r"^[0-9a-f]+ ","",l).rsplit(" (",1)[0] for l in lines]
    leaf[syms[0][:90]]+=1
    # handler: the frame just before do_run_one (callee side)
    h="?"
    for i,s in enumerate(syms):
        if "scheduler::do_run_one" in s or "epoll_reactor::run" in s:
            # take the nearest parley frame below it
            for t in reversed(syms[:i]):
                if "parley::" in t: h=t[:110]; break
            break
    top[h]+=1
print("samples",n,"user",nu)
for k,v in top.most_common(25): print(v,k)
print("--- leaves")
for k,v in leaf.most_common(40): print(v,k)
