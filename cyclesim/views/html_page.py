"""The page around cyclesim's one-page HTML report: its style and its timeline script.

Everything is inline (no font, script or style sheet from a network): the file opens offline
and can be mailed. The script draws the PE array's state and the busiest ports on a canvas
from the data the report embeds; wheel zooms around the pointer, drag pans, double-click
shows the whole run again.
"""

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}tr:nth-child(even){background:#f6f6f6}
.bar{display:flex;height:26px;border:1px solid #999;margin:8px 0}.bar div{height:100%}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;
margin-right:4px;vertical-align:middle}img{max-width:100%;border:1px solid #eee;margin:6px 0}
#timeline{width:100%;height:auto;border:1px solid #ccc;cursor:grab}.note{color:#666}
"""

SCRIPT = r"""
(function(){
const D = JSON.parse(document.getElementById('timeline-data').textContent);
const cv = document.getElementById('timeline'), ctx = cv.getContext('2d');
const LEFT = 250, ROW = 26, TOP = 24;
const rows = [{name: 'PE array state', runs: D.pe, colors: D.state_colors}]
  .concat(D.ports.map(p => ({name: p.name, runs: p.runs, colors: [D.port_color]})));
let v0 = 0, v1 = D.cycles;
function size(){ cv.width = cv.clientWidth || 1000; cv.height = TOP + ROW * rows.length + 8; }
function first(runs, t){ // index of the first run ending after t (runs: flat [start,end,k,...])
  let lo = 0, hi = runs.length / 3;
  while (lo < hi){ const m = (lo + hi) >> 1; if (runs[3*m+1] <= t) lo = m + 1; else hi = m; }
  return lo;
}
function draw(){
  const w = cv.width - LEFT, k = w / Math.max(1, v1 - v0);
  ctx.clearRect(0, 0, cv.width, cv.height); ctx.font = '12px sans-serif';
  ctx.fillStyle = '#222';
  ctx.fillText('cycles ' + Math.round(v0).toLocaleString() + ' .. ' + Math.round(v1).toLocaleString(), LEFT, 14);
  rows.forEach((r, i) => {
    const y = TOP + i * ROW; ctx.fillStyle = '#222'; ctx.fillText(r.name, 4, y + 16);
    ctx.fillStyle = '#f3f3f3'; ctx.fillRect(LEFT, y + 2, w, ROW - 6);
    let lastPx = -1;
    for (let j = first(r.runs, v0); j < r.runs.length / 3; j++){
      const a = r.runs[3*j], b = r.runs[3*j+1]; if (a >= v1) break;
      const x0 = LEFT + (Math.max(a, v0) - v0) * k, x1 = LEFT + (Math.min(b, v1) - v0) * k;
      if (Math.floor(x1) <= lastPx && x1 - x0 < 1) continue; // many runs in one pixel: first wins
      ctx.fillStyle = r.colors[r.runs[3*j+2]] || r.colors[0];
      ctx.fillRect(x0, y + 2, Math.max(1, x1 - x0), ROW - 6); lastPx = Math.floor(x1);
    }
  });
  cv.dataset.window = Math.round(v0) + '..' + Math.round(v1);
}
function at(ev){ return v0 + (ev.offsetX - LEFT) / (cv.width - LEFT) * (v1 - v0); }
cv.addEventListener('wheel', ev => {
  ev.preventDefault(); const t = at(ev), f = ev.deltaY < 0 ? 0.8 : 1.25;
  v0 = Math.max(0, t - (t - v0) * f); v1 = Math.min(D.cycles, t + (v1 - t) * f);
  if (v1 - v0 < 10) v1 = v0 + 10; draw();
}, {passive: false});
let drag = null;
cv.addEventListener('mousedown', ev => { drag = {x: ev.offsetX, a: v0, b: v1}; });
window.addEventListener('mouseup', () => { drag = null; });
cv.addEventListener('mousemove', ev => {
  if (!drag) return; const d = (ev.offsetX - drag.x) / (cv.width - LEFT) * (drag.b - drag.a);
  v0 = Math.max(0, drag.a - d); v1 = Math.min(D.cycles, v0 + (drag.b - drag.a)); draw();
});
cv.addEventListener('dblclick', () => { v0 = 0; v1 = D.cycles; draw(); });
window.addEventListener('resize', () => { size(); draw(); });
size(); draw();
const legend = document.getElementById('timeline-legend');
D.states.forEach((s, i) => {
  const e = document.createElement('span'), sw = document.createElement('i');
  sw.className = 'sw'; sw.style.background = D.state_colors[i];
  e.appendChild(sw); e.appendChild(document.createTextNode(s)); legend.appendChild(e);
});
{ const e = document.createElement('span'), sw = document.createElement('i');
  sw.className = 'sw'; sw.style.background = D.port_color;
  e.appendChild(sw); e.appendChild(document.createTextNode('port busy (a transfer or the PE array)'));
  legend.appendChild(e); }
cv.dataset.rendered = 'yes';
})();
"""
