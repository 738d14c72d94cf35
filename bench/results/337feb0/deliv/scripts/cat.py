import sys, subprocess, collections
def cats(path):
    out = subprocess.run(["perf","script","-i",path,"-F","comm,tid,ip,sym"],capture_output=True,text=True).stdout
    c = collections.Counter(); thr=collections.Counter()
    cur=[]; head=None
    def flush():
        if head is None: return
        s=" ".join(cur)
        k="user"
        for key,name in [("__sys_sendto","send"),("__sys_sendmsg","sendmsg"),("do_epoll_wait","epoll_wait"),("do_epoll_ctl","epoll_ctl"),("futex","futex"),("__sys_recvfrom","recv"),("sock_recvmsg","recv"),("timerfd","timerfd"),("do_syscall_64","sys_other"),("asm_","irq"),("finish_task_switch","switch")]:
            if key in s: k=name; break
        c[k]+=1; thr[head]+=1
    for line in out.splitlines():
        if not line.strip(): flush(); head=None; cur=[]; continue
        if not line.startswith((" ","\t")): head=line.split()[0]; cur=[]
        else: cur.append(line.strip().split(None,1)[-1])
    flush()
    return c, thr
for p in sys.argv[1:]:
    c,t=cats(p); n=sum(c.values())
    print(p, n, " ".join(f"{k}={v}" for k,v in c.most_common()), "| threads", dict(t))
