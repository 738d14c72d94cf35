#!/usr/bin/env python3
# text_runs.py PID NAME: resident runs of the r-xp mapping of NAME (pages), and how much of it is resident
import sys,struct
pid,name=sys.argv[1],sys.argv[2]
for l in open(f'/proc/{pid}/maps'):
    f=l.split()
    if len(f)>=6 and name in f[5] and 'x' in f[1]:
        lo,hi=(int(x,16) for x in f[0].split('-'))
pm=open(f'/proc/{pid}/pagemap','rb')
runs=[];cur=None;res=0
for va in range(lo,hi,4096):
    pm.seek(va//4096*8); p=struct.unpack('Q',pm.read(8))[0]>>63
    res+=p
    if p:
        if cur is None: cur=[va,va]
        cur[1]=va
    elif cur: runs.append(cur); cur=None
if cur: runs.append(cur)
print(f'{res*4} KiB of {(hi-lo)//1024} KiB resident in {len(runs)} runs; first runs (offset KiB, pages):', [((r[0]-lo)//1024,(r[1]-r[0])//4096+1) for r in runs][:12])
