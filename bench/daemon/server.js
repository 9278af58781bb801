// A Node server past its warm-up, for bench/daemon/push.sh: it compiles
// many functions first (run under --perf-basic-prof, a perf map of some
// 12 MB for the default 150,000), then works 10 ms every 100 ms in a
// few of them (hot), as a server between requests: once those are
// optimized, it makes no new code. A profiler that reads the whole perf
// map again whenever it names this process's samples pays for it at
// every push.
'use strict';
const n = +(process.argv[2] || 150000);
const hot = Math.min(n, +(process.argv[3] || 1000));
const fns = [];
let sum = 0;
for (let i = 0; i < n; i++) {
  const f = new Function('x', `let s = ${i}; for (let j = 0; j < x; j++) s = (s + (j ^ ${i})) | 0; return s;`);
  for (let k = 0; k < 20; k++) sum = (sum + f(50)) | 0;
  fns.push(f);
}
let next = 0;
setInterval(() => {
  const end = Date.now() + 10;
  while (Date.now() < end) {
    for (let k = 0; k < 100; k++) sum = (sum + fns[next++ % hot](50)) | 0;
  }
}, 100);
