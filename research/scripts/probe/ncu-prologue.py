import csv, sys, re
f=sys.argv[1]
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
cats=[h for h in hdr if h.startswith('stall_') and '(Not' not in h]
tot=sum(int(r[ix['Warp Stall Sampling (All Samples)']] or 0) for r in data)
print('total samples', tot, 'instructions', len(data))
# first store with SYS scope
first=None
for k,r in enumerate(data):
    if re.search(r'\bST[G]?\.E\..*SYS|\bSTG\..*STRONG\.SYS|ST\.E\.128\.STRONG', r[ix['Source']]):
        first=k; break
print('first sys store at index', first, data[first][ix['Source']].strip() if first is not None else '')
lim=first if first is not None else 400
pro=data[:lim]
ps=sum(int(r[ix['Warp Stall Sampling (All Samples)']] or 0) for r in pro)
print('prologue samples', ps, f'{100*ps/tot:.1f}% of all')
agg={c:sum(int(r[ix[c]] or 0) for r in pro) for c in cats}
print(' '.join(f'{c[6:]}={v}' for c,v in sorted(agg.items(), key=lambda x:-x[1]) if v))
top=sorted(range(lim), key=lambda k:-int(data[k][ix['Warp Stall Sampling (All Samples)']] or 0))[:25]
for k in sorted(top):
    r=data[k]; s=int(r[ix['Warp Stall Sampling (All Samples)']] or 0)
    br=' '.join(f'{c[6:]}={r[ix[c]]}' for c in cats if r[ix[c]] not in ('0',''))
    print(f'{k:4d} {s:5d} {r[ix["Source"]].strip()[:60]:60s} {br}')
