// jitprof's marks on JIT code in pprof's views. The page defines
// jitprofJIT: the name of each JIT function -> what it is ("JIT code:
// [JIT jitlog] minijit, generation 3").

// jitprofWhat says what a frame of pprof's is, or '' for native code.
// pprof adds ":LINE" to names at line granularity.
function jitprofWhat(name) {
  if (typeof jitprofJIT === 'undefined') return '';
  name = name.replace(/\n\(inlined\)$/, '');
  return jitprofJIT[name] || jitprofJIT[name.replace(/:\d+(:\d+)?$/, '')] || '';
}

// jitprofStackViewer draws pprof's flame graph with JIT code marked: a
// colour index that is not a number gives a box no colour of pprof's,
// and jitprof.css colours such boxes. Their tooltip and the details line
// say what each is.
function jitprofStackViewer(stacks, nodes) {
  for (const src of stacks.Sources) {
    if (jitprofWhat(src.FullName)) src.Color = 'jit';
  }
  stackViewer(stacks, nodes);
  const chart = document.getElementById('stack-chart');
  const details = document.getElementById('current-details-left');
  chart.addEventListener('mouseover', (e) => {
    const box = e.target.closest('.boxbg');
    if (!box || box.style.background) return;
    // After pprof's own handler has written the title and details.
    setTimeout(() => {
      const what = jitprofWhat(box.title.slice(box.title.lastIndexOf(' │ ') + 3));
      if (!what || box.title.endsWith(what)) return;
      box.title += '\n' + what;
      details.innerText += ' — ' + what;
    });
  });
}

// pprof's top table is drawn, and drawn again on every sort, by its
// script: its JIT rows are marked as they come.
document.addEventListener('DOMContentLoaded', () => {
  const rows = document.getElementById('rows');
  if (!rows || !document.getElementById('toptable')) return;
  const mark = () => {
    for (const td of rows.querySelectorAll('td:nth-child(6):not(.jitprof-jit)')) {
      const what = jitprofWhat(td.textContent);
      if (what) {
        td.classList.add('jitprof-jit');
        td.title = what;
      }
    }
  };
  new MutationObserver(mark).observe(rows, {childList: true});
  mark();
});
