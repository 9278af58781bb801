// Draws flameData: {frames: [[name, kind, info]...], root: [frame, value,
// [children...]]}, root on top; a click zooms into a frame, Esc zooms out,
// the search box highlights the frames whose names match.
(function () {
  const frames = flameData.frames;
  const root = flameData.root;
  const chart = document.getElementById('fg-chart');
  const details = document.getElementById('fg-details');
  const search = document.getElementById('fg-search');
  const matched = document.getElementById('fg-matched');
  const ROW = 18;
  let path = [root]; // from the root to the frame zoomed into
  let re = null;

  function name(n) { return n[0] < 0 ? 'all' : frames[n[0]][0]; }
  function kind(n) { return n[0] < 0 ? 3 : frames[n[0]][1]; }
  function info(n) { return n[0] < 0 ? '' : frames[n[0]][2]; }
  function pct(v) { return (100 * v / Math.max(root[1], 1)).toFixed(2) + '%'; }
  // A differential graph (flameData.base, the base's samples) has each
  // node's base samples as n[3]: its change is of shares, in points.
  const base = flameData.base;
  function change(n) { return 100 * (n[1] / Math.max(root[1], 1) - (n[3] || 0) / Math.max(base, 1)); }
  let maxChange = 0;
  if (base !== undefined) {
    (function walk(n) { maxChange = Math.max(maxChange, Math.abs(change(n))); n[2].forEach(walk); })(root);
  }
  function describe(n) {
    const i = info(n);
    let s = name(n) + ' — ' + n[1] + ' samples (' + pct(n[1]) + ')';
    if (base !== undefined) {
      const c = change(n);
      s += ', base ' + (n[3] || 0) + ' samples (' + (100 * (n[3] || 0) / Math.max(base, 1)).toFixed(2) + '%), ' + (c >= 0 ? '+' : '') + c.toFixed(2) + ' points';
    }
    return s + (i ? ' — ' + i : '');
  }

  // Native frames get warm hues, by name so that a function keeps its
  // colour; JIT code green ones; the kernel and commands their own.
  function hue(s) {
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
    return h % 40;
  }
  function colour(n) {
    if (base !== undefined && n[0] >= 0) {
      // Red for a larger share, blue for a smaller one, as Brendan
      // Gregg's differential flame graphs; white for no change.
      const c = change(n);
      const light = 100 - 45 * Math.abs(c) / Math.max(maxChange, 0.01);
      return 'hsl(' + (c >= 0 ? 0 : 220) + ', 80%, ' + light.toFixed(0) + '%)';
    }
    switch (kind(n)) {
      case 0: return 'hsl(' + (10 + hue(name(n))) + ', 85%, 70%)';
      case 1: return 'hsl(' + (120 + hue(name(n))) + ', 50%, 62%)';
      default: return '';
    }
  }

  function draw() {
    const width = chart.clientWidth;
    const boxes = [];
    let depth = 0;
    const focus = path[path.length - 1];
    path.forEach((n, d) => {
      if (n !== focus) boxes.push(box(n, 0, width, d, path.slice(0, d + 1), true));
    });
    (function layout(n, x, w, d, p) {
      boxes.push(box(n, x, w, d, p, false));
      depth = Math.max(depth, d);
      let cx = x;
      for (const c of n[2]) {
        const cw = w * c[1] / n[1];
        if (cw >= 1) layout(c, cx, cw, d + 1, p.concat([c]));
        cx += cw;
      }
    })(focus, 0, width, path.length - 1, path);
    chart.style.height = ((depth + 1) * ROW + 4) + 'px';
    chart.replaceChildren(...boxes);
  }

  function box(n, x, w, d, p, above) {
    const el = document.createElement('div');
    el.className = 'fg-box k' + kind(n) + (above ? ' fg-above' : '') + (re && re.test(name(n)) ? ' fg-match' : '');
    el.style.left = x + 'px';
    el.style.top = (d * ROW) + 'px';
    el.style.width = Math.max(w - 1, 1) + 'px';
    const c = colour(n);
    if (c) el.style.background = c;
    el.textContent = name(n);
    el.title = describe(n);
    el.addEventListener('mouseenter', () => { details.textContent = describe(n); });
    el.addEventListener('click', () => { path = p; draw(); });
    return el;
  }

  // The samples under frames matching re, each stack counted once.
  function matchedSamples(n) {
    if (n[0] >= 0 && re.test(name(n))) return n[1];
    let s = 0;
    for (const c of n[2]) s += matchedSamples(c);
    return s;
  }

  search.addEventListener('input', () => {
    try {
      re = search.value ? new RegExp(search.value) : null;
    } catch (e) {
      re = null;
    }
    matched.textContent = re ? 'matched ' + pct(matchedSamples(root)) : '';
    draw();
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && path.length > 1) {
      path = path.slice(0, -1);
      draw();
    }
  });
  window.addEventListener('resize', draw);
  draw();
})();
