#!/usr/bin/env python3
"""The longest functions under the given folders, by lines from `fn` to its closing
brace: `python3 scripts/longest-fns.py src/console src/engine` (issue 43 holds those
two to 120 lines)."""
import os
import re
import signal
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)
res=[]
for root in sys.argv[1:]:
    for dp,_,fs in os.walk(root):
        for f in fs:
            if not f.endswith('.rs'): continue
            p=os.path.join(dp,f); L=open(p).read().split('\n')
            i=0
            while i<len(L):
                m=re.match(r'^(\s*)(pub(\([^)]*\))?\s+)?(async\s+)?fn\s+(\w+)',L[i])
                if m and not L[i].rstrip().endswith(';'):
                    ind=len(m.group(1)); start=i
                    # find opening brace line
                    j=i
                    while j<len(L) and '{' not in L[j]: j+=1
                    k=j+1
                    while k<len(L) and not (L[k].startswith(' '*ind+'}') and len(L[k].rstrip())==ind+1): k+=1
                    res.append((k-start+1,p,m.group(5)))
                    i=j+1
                    continue
                i+=1
res.sort(reverse=True)
for r in res[:8]: print(r)
