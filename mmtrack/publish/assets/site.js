/* mmtrack static site: renders pages from data scripts (works from file://).
 * Every string from the data is inserted with textContent or escaped for
 * Plotly's text renderer; nothing from the data is ever parsed as HTML. */
(function () {
  'use strict';
  var MM = (window.MM = window.MM || {});
  var store = { site: null, commits: [], index: null, regressions: null, meta: {}, points: {}, verdicts: {} };
  MM._store = store;
  MM.site = function (s) { store.site = s; };
  MM.commits = function (k, rows) {
    var base = k * store.site.chunk;
    for (var j = 0; j < rows.length; j++) store.commits[base + j] = rows[j];
  };
  MM.index = function (rows) { store.index = rows; };
  MM.regressions = function (rows) { store.regressions = rows; };
  MM.meta = function (id, m) { store.meta[id] = m; };
  MM.points = function (id, k, rows) { (store.points[id] = store.points[id] || {})[k] = rows; };
  MM.verdicts = function (byBench) { store.verdicts = byBench; };

  var HEX_ID = /^[0-9a-f]{16}$/;
  var SHA = /^[0-9a-fA-F]{4,64}$/;
  var loaded = {};

  function root() { return document.body.getAttribute('data-root') || ''; }

  function load(src) {
    if (loaded[src]) return loaded[src];
    loaded[src] = new Promise(function (resolve, reject) {
      var s = document.createElement('script');
      s.src = root() + src;
      s.onload = function () { resolve(); };
      s.onerror = function () { reject(new Error('could not load ' + src)); };
      document.head.appendChild(s);
    });
    return loaded[src];
  }
  function loadAll(srcs) { return Promise.all(srcs.map(load)); }
  // A benchmark's points of chunk k: one file per group of benchmarks, by the id's first hex digit (publish/chunks.py).
  function pointsFile(id, k) { return 'data/b/' + id.charAt(0) + '.' + k + '.js'; }
  function commitChunks() {
    var n = Math.ceil(store.site.n_commits / store.site.chunk), out = [];
    for (var k = 0; k < n; k++) out.push('data/commits/' + k + '.js');
    return out;
  }

  // ---- DOM helpers (text only) ----
  function el(tag, props, children) {
    var e = document.createElement(tag);
    if (props) for (var p in props) {
      if (p === 'text') e.textContent = props[p];
      else if (p === 'cls') e.className = props[p];
      else if (p === 'href') { if (props[p]) e.setAttribute('href', props[p]); }
      else e.setAttribute(p, props[p]);
    }
    (children || []).forEach(function (c) {
      if (c == null) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function $(id) { return document.getElementById(id); }
  // Plotly's SVG text understands a few tags and entities: escape them.
  function pe(s) {
    return String(s == null ? '' : s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  }

  function fmt(v, format) {
    if (v == null || !isFinite(v)) return 'n/a';
    if (format === 'integer') return Math.round(v).toLocaleString('en-US');
    var a = Math.abs(v);
    if (v === 0 || (a >= 1e-3 && a < 1e3)) return v.toFixed(3);
    if (a >= 1e3 && a < 1e7) return v.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
    return v.toExponential(3);
  }
  // A value with its unit, durations in s scaled to ns/µs/ms.
  var TIME_UNITS = [[1, 's'], [1e-3, 'ms'], [1e-6, 'µs'], [1e-9, 'ns']];
  function withUnit(v, s) {
    if (v == null || !isFinite(v)) return 'n/a';
    if (s.unit === 's' && v !== 0) {
      for (var k = 0; k < TIME_UNITS.length; k++) {
        if (Math.abs(v) >= TIME_UNITS[k][0] || k === TIME_UNITS.length - 1) return (v / TIME_UNITS[k][0]).toPrecision(4) + ' ' + TIME_UNITS[k][1];
      }
    }
    if (COUNT_UNITS.indexOf(s.unit) >= 0) {  // 1.27 M instr/op
      var sc = scaleFor([v], s.unit);
      return (v / sc.f).toPrecision(3) + ' ' + sc.unit;
    }
    return fmt(v, s.format) + ' ' + s.unit;
  }
  // Counts per op (callgrind's and perf's events), as COUNT_UNITS in mmtrack/measure/units.py.
  var COUNT_UNITS = ['instr/op', 'cycles/op', 'misses/op', 'instructions/op', 'branches/op', 'branch-misses/op',
                     'cache-references/op', 'cache-misses/op', 'stalled-cycles-frontend/op', 'stalled-cycles-backend/op',
                     'L1-icache-load-misses/op'];
  // One scale for a chart's axis and its hovers: the same ladders as mmtrack/measure/units.py (scale_for).
  var BINARY = [[Math.pow(1024, 4), 'Ti'], [Math.pow(1024, 3), 'Gi'], [Math.pow(1024, 2), 'Mi'], [1024, 'Ki'], [1, '']];
  var SI = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, '']];
  function ladder(unit) {
    if (unit === 's' || unit === 'sec' || unit === 'seconds' || unit === 'second') return TIME_UNITS;
    if (unit === 'task-clock/op' || unit === 'cpu-clock/op') {  // perf counts ns: CPU time per op
      return TIME_UNITS.map(function (x) { return [x[0] * 1e9, x[1] + ' CPU/op']; });
    }
    if (COUNT_UNITS.indexOf(unit) >= 0) return SI.map(function (x) { return [x[0], x[1] ? x[1] + ' ' + unit : unit]; });
    if (unit === 'B' || unit === 'bytes' || unit === 'byte') return BINARY.map(function (x) { return [x[0], x[1] + 'B']; });
    var cut = unit.lastIndexOf('/'), base = unit.slice(0, cut);
    if (cut > 0 && unit.slice(cut + 1) === 's') {
      if (base === 'B' || base === 'bytes' || base === 'byte') return BINARY.map(function (x) { return [x[0], x[1] + 'B/s']; });
      return SI.map(function (x) { return [x[0], x[1] + base + '/s']; });
    }
    return null;
  }
  function scaleFor(values, unit) {
    var steps = ladder(unit);
    var finite = values.filter(function (v) { return v != null && isFinite(v) && v !== 0; })
      .map(Math.abs).sort(function (a, b) { return a - b; });
    if (!steps || !finite.length) return { f: 1, unit: unit };
    var typical = finite[Math.floor(finite.length / 2)];
    for (var k = 0; k < steps.length; k++) if (typical >= steps[k][0]) return { f: steps[k][0], unit: steps[k][1] };
    return { f: steps[steps.length - 1][0], unit: steps[steps.length - 1][1] };
  }
  function scaled(v, sc, s) {
    if (v == null || !isFinite(v)) return 'n/a';
    if (sc.f === 1 && !ladder(s.unit)) return fmt(v, s.format) + ' ' + s.unit;
    return (v / sc.f).toPrecision(4) + ' ' + sc.unit;
  }
  // Before → after in one scale for both (1.52 ms → 1.69 ms, never 0.002 → 0.002); a value never wraps from
  // its unit, and the line breaks before the arrow only.
  function pair(before, after, s) {
    var sc = scaleFor([before, after], s.unit);
    return el('span', null, [el('span', { cls: 'nowrap', text: scaled(before, sc, s) }), ' ',
                             el('span', { cls: 'nowrap', text: '→ ' + scaled(after, sc, s) })]);
  }
  function pct(ratio) {
    if (ratio == null || !isFinite(ratio)) return 'n/a';
    var p = (ratio - 1) * 100;
    return (p >= 0 ? '+' : '') + p.toFixed(1) + '%';
  }
  function commitHref(sha) {
    var u = store.site.commit_url;
    return u && SHA.test(sha || '') ? u + sha : null;
  }
  // A benchmark page link; ``sel`` (a series record) preselects its case in the URL hash.
  function benchHref(id, sel) {
    if (!HEX_ID.test(id)) return null;
    var h = '';
    if (sel) {
      var q = new URLSearchParams();
      q.set('machine', sel.machine); q.set('env', sel.env);
      Object.keys(sel.params || {}).sort().forEach(function (k) { q.set('p:' + k, sel.params[k]); });
      h = '#' + q.toString();
    }
    return root() + 'b/' + id + '.html' + h;
  }
  function shortSha(sha) { return String(sha || '').slice(0, 8); }
  function shaLink(sha) {
    var href = commitHref(sha);
    return el(href ? 'a' : 'span', { cls: 'sha', href: href, title: sha || '' , text: shortSha(sha) });
  }
  function paramsText(p) {
    var ks = Object.keys(p || {}).sort();
    return ks.map(function (k) { return k + '=' + p[k]; }).join(', ');
  }
  function badge(kind) { return el('span', { cls: 'badge ' + (kind === 'regression' || kind === 'improvement' ? kind : 'change'), text: kind }); }
  function fillSelect(sel, values, keepFirst) {
    while (sel.options.length > (keepFirst ? 1 : 0)) sel.remove(sel.options.length - 1);
    values.forEach(function (v) { sel.appendChild(el('option', { value: v, text: v })); });
    // A long environment name shows whole on hover, whatever width the control has.
    function titled() { sel.title = sel.value; }
    titled();
    if (!sel.dataset.titled) { sel.dataset.titled = '1'; sel.addEventListener('change', titled); }
  }
  // A benchmark's name as a link that may break after each dot and underscore (<wbr>, no text of its own), so a
  // narrow column breaks "TimeSuite.time_|absolute_|momentum", not "time_a|bsolute"; its textContent is the name.
  function benchLink(href, name) {
    var parts = (String(name).match(/[^._]*[._]?/g) || []).filter(function (x) { return x; });  // no lookbehind: old Safari
    var children = [];
    parts.forEach(function (part, i) { if (i) children.push(el('wbr')); children.push(part); });
    return el('a', { href: href, cls: 'bench-link' }, children);
  }
  function uniq(xs) { var s = {}, out = []; xs.forEach(function (x) { if (!s[x]) { s[x] = 1; out.push(x); } }); return out.sort(); }
  function status(msg) { var s = $('status'); if (s) { s.textContent = msg; s.hidden = !msg; } }
  // Columns that only some sites fill (params, the A/B verdict): left out where every row is empty, so the
  // others keep the width. The environment: shown where the rows come from more than one (else they look alike).
  var OPTIONAL = ['Params', 'A/B'];
  var DISTINCT = ['Environment'];
  function table(t, head, rows) {
    clear(t);
    var keep = head.map(function (h, j) {
      if (DISTINCT.indexOf(h) >= 0) return uniq(rows.map(function (r) { return String(r.cells[j]); })).length > 1;
      return OPTIONAL.indexOf(h) < 0 || rows.some(function (r) { var c = r.cells[j]; return c instanceof Node || (c != null && c !== ''); });
    });
    var kept = function (xs) { return xs.filter(function (x, j) { return keep[j]; }); };
    t.appendChild(el('thead', null, [el('tr', null, kept(head).map(function (h) { return el('th', { text: h }); }))]));
    var tb = el('tbody');
    rows.forEach(function (r) { tb.appendChild(el('tr', r.cls ? { cls: r.cls } : null, kept(r.cells).map(function (c) {
      return c instanceof Node ? el('td', null, [c]) : el('td', { text: c == null ? '' : String(c) });
    }))); });
    t.appendChild(tb);
  }

  // ---- index ----
  function pageIndex() {
    load('data/index.js').then(function () {
      var rows = store.index;
      fillSelect($('machine'), uniq([].concat.apply([], rows.map(function (r) { return r.machines; }))), true);
      fillSelect($('metric'), uniq([].concat.apply([], rows.map(function (r) { return r.metrics; }))), true);
      var nch = rows.reduce(function (a, r) { return a + r.changes; }, 0);
      $('summary').textContent = rows.length + ' benchmarks · ' + store.site.n_commits + ' commits · ' + nch + ' change points';
      function render() {
        var q = $('search').value.toLowerCase(), m = $('machine').value, me = $('metric').value, only = $('only-changes').checked;
        var shown = rows.filter(function (r) {
          return (!q || r.name.toLowerCase().indexOf(q) >= 0) && (!m || r.machines.indexOf(m) >= 0) &&
            (!me || r.metrics.indexOf(me) >= 0) && (!only || r.latest);
        });
        var sort = $('sort').value;
        function recent(r) { return r.latest && r.latest.after != null ? r.latest.after : -1; }
        // As ChangePoint.size: a ratio at or below 0 (a track_ value's sign flip) or infinite (from 0; JSON has it
        // as null) has no log: it ranks first.
        function size(r) {
          if (!r.latest) return -1;
          var q = r.latest.ratio;
          return q != null && q > 0 ? Math.abs(Math.log(q)) : Infinity;
        }
        if (sort === 'recent') shown.sort(function (a, b) { return recent(b) - recent(a); });
        else if (sort === 'size') shown.sort(function (a, b) { return size(b) - size(a); });
        table($('benchmarks'), ['Benchmark', 'Machines', 'Metrics', 'Series', 'Latest change', 'Since commit'], shown.map(function (r) {
          var l = r.latest;
          return {
            cells: [
              benchLink(benchHref(r.id), r.name),
              r.machines.join(', '),
              el('span', { title: r.metrics.join('\n'), text: r.metrics.length === 1 ? r.metrics[0] : r.metrics.length + ' metrics' }),
              String(r.series),
              l ? el('a', { href: benchHref(r.id, l), cls: 'change-link' }, [badge(l.kind), ' ' + pct(l.ratio) + ' ', el('span', { cls: 'muted', text: l.metric })]) : el('span', { cls: 'muted', text: 'none' }),
              l ? shaLink(l.after_sha) : ''
            ]
          };
        }));
      }
      ['search', 'machine', 'metric', 'sort', 'only-changes'].forEach(function (id) { $(id).addEventListener('input', render); });
      render();
    }).catch(fail);
  }

  // ---- regressions ----
  // `mmtrack run --confirm`: the A/B re-measurement of a suspected change, with its evidence.
  function abText(v) {
    if (!v) return '';
    var p = v.p_value == null ? '' : ', p ' + Number(v.p_value).toPrecision(2);
    return el('span', { cls: 'badge ab-' + v.state, text: v.state + (v.ratio ? ' ' + pct(v.ratio) : '') + p + ', ' + v.rounds + ' rounds' });
  }
  // A detected change point, or what `mmtrack run` said when it compared the commit with the one before.
  function foundBy(r) {
    if (r.source === 'ab') return el('span', { cls: 'from-ab', title: 'both commits measured interleaved on one machine',
      text: 'mmtrack continuous (A/B): ' + r.verdict });
    if (r.source !== 'run') return 'detect';
    return el('span', { cls: 'from-run', title: 'mmtrack run compared this commit with the previous one (mmtrack compare); not a change point of detect',
      text: 'mmtrack run (per-commit comparison): ' + verdictText(r.verdict, r.state) + (r.note ? ': ' + r.note : '') });
  }
  // `run --instrument callgrind`: both commits' kept profiles of a regressed count (Valgrind's format).
  // A profile is kept per commit (`run`, `continuous`) or per saved run (`bench`).
  var PROFILE = /^profiles\/([0-9a-f]{7,64}|bench-run-[0-9]+)\/[A-Za-z0-9_.=-]+$/;
  var PROFILE_TITLE = 'callgrind_annotate or KCachegrind reads it';
  function profileLink(path, text) {
    return el('a', { href: root() + path, text: text, title: PROFILE_TITLE });
  }
  function profileLinks(r) {
    var p = r.profiles;
    if (!p || p.length !== 2 || !PROFILE.test(p[0]) || !PROFILE.test(p[1])) return '';
    return el('span', { cls: 'profiles' }, [' · callgrind profiles: ', profileLink(p[0], 'before'), ' ', profileLink(p[1], 'after')]);
  }
  function verdictText(verdict, state) {
    return verdict + (state ? ' (' + state + ')' : '');  // unchanged (refuted): a suspicion taken back
  }
  // What the page shows of what it has, the counts adding up; with nothing at all, why, and what it needs.
  function regressionsSummary(rows, shown) {
    var runs = shown.filter(function (r) { return r.source === 'run'; }).length;
    var abs = shown.filter(function (r) { return r.source === 'ab'; }).length;
    var hidden = rows.length - shown.length;
    var text = shown.length + ' of ' + rows.length + ' rows shown' + (hidden ? ' (' + hidden + ' hidden by the filters above)' : '') +
      ': ' + plural(shown.length - runs - abs, 'change point') + ' found by mmtrack detect, ' +
      plural(runs, 'verdict') + ' of mmtrack run\'s per-commit comparison' +
      (abs ? ', ' + plural(abs, 'verdict') + ' of mmtrack continuous (A/B)' : '');
    var need = store.site.detect_min, have = store.site.n_commits;
    if (need && have < need) {
      text += '. mmtrack detect needs ' + need + ' commits of a series and this site has ' + plural(have, 'commit') +
        ': measure ' + (need - have) + ' more; until then, mmtrack run\'s verdicts (from the second commit on) show here';
    }
    return text;
  }
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }
  function pageRegressions() {
    load('data/regressions.js').then(function () {
      var rows = store.regressions;
      fillSelect($('machine'), uniq(rows.map(function (r) { return r.machine; })), true);
      function render() {
        var q = $('search').value.toLowerCase(), kind = $('kind').value, m = $('machine').value, pers = $('persisting').checked;
        var shown = rows.filter(function (r) {
          var isKind = kind === 'event' ? !!r.event : (!kind || (r.kind === kind && !r.event));  // events are not regressions
          return isKind && (!m || r.machine === m) && (!pers || r.persists) &&
            (!q || r.bench.toLowerCase().indexOf(q) >= 0);
        });
        $('summary').textContent = regressionsSummary(rows, shown);
        table($('regressions'), ['Benchmark', 'Machine', 'Environment', 'Params', 'Metric', 'Change', 'Before → after', 'Started in', 'Persists', 'A/B', 'Found by'], shown.map(function (r) {
          return {
            cls: (r.event ? 'event' : r.kind) + (r.source === 'run' ? ' from-run' : ''),  // an event is no regression
            cells: [
              benchLink(benchHref(r.id, r), r.bench),
              r.machine,
              r.env,
              paramsText(r.params),
              r.metric,
              r.event ? el('span', { cls: 'event', title: r.event }, [badge('environment event'), ' ' + pct(r.ratio) + ': ' + r.event])
                : el('span', null, [badge(r.kind), ' ' + pct(r.ratio)]),
              pair(r.before_value, r.after_value, r),
              el('span', { cls: 'nowrap' }, [shaLink(r.before_sha), ' … ', shaLink(r.after_sha)]),
              r.source === 'run' || r.source === 'ab' ? '' : r.persists ? 'yes' : 'no',
              abText(r.ab),
              el('span', null, [foundBy(r), profileLinks(r)])
            ]
          };
        }));
      }
      ['search', 'kind', 'machine', 'persisting'].forEach(function (id) { $(id).addEventListener('input', render); });
      render();
    }).catch(fail);
  }

  // ---- benchmark ----
  function seriesData(id, meta, si) {
    var out = { i: [], m: [], lo: [], hi: [] };
    var chunks = store.points[id] || {};
    meta.chunks.forEach(function (k) {
      var c = chunks[k] && chunks[k][si];
      if (!c) return;
      out.i = out.i.concat(c.i); out.m = out.m.concat(c.m); out.lo = out.lo.concat(c.lo); out.hi = out.hi.concat(c.hi);
    });
    return out;
  }

  var COLORS = { line: '#2563eb', band: 'rgba(37,99,235,0.16)', regression: '#dc2626', improvement: '#16a34a', change: '#6b7280' };

  // The x of a commit position: the position itself, or the commit date when drawing by date.
  function allDated() { for (var i = 0; i < store.site.n_commits; i++) if (!(store.commits[i] || [])[1]) return false; return true; }
  function xOf(byDate) { return byDate ? function (i) { return store.commits[i][1]; } : function (i) { return i; }; }

  // The x of a store-wide commit index in this series: its position in the series' own history
  // (0, 1, 2, ... whatever else the store holds), or the commit date when drawing by date.
  function seriesX(d, byDate) {
    if (byDate) return xOf(true);
    var pos = {};
    d.i.forEach(function (i, j) { pos[i] = j; });
    return function (i) {
      if (pos[i] != null) return pos[i];
      for (var j = 0; j < d.i.length; j++) if (d.i[j] >= i) return j - 0.5;  // between two measured commits
      return d.i.length - 0.5;
    };
  }

  // Commit position -> the kept callgrind profile of a case (machine, environment, params): its instruction count
  // series lists them, and every series of the case links them.
  function profilesOf(meta, s) {
    var out = {}, key = caseKey(s);
    meta.series.forEach(function (o) {
      if (caseKey(o) !== key) return;
      (o.profiles || []).forEach(function (p) { if (PROFILE.test(p[1])) out[p[0]] = p[1]; });
    });
    return out;
  }

  // The x axis in this series' own commits (oldest → newest): at most 12 ticks, each its commit's short sha over its date.
  function commitAxis(d) {
    var step = Math.max(1, Math.ceil(d.i.length / 12)), vals = [];
    for (var j = 0; j < d.i.length; j += step) vals.push(j);
    var text = vals.map(function (j) {
      var c = store.commits[d.i[j]] || [];
      return pe(shortSha(c[0])) + (c[1] ? '<br>' + pe(String(c[1]).slice(0, 10)) : '');
    });
    return { title: { text: 'commit in this history (oldest → newest)', font: { size: 11 }, standoff: 4 }, type: 'linear',
             zeroline: false, gridcolor: '#eef0f3', tick0: 0, dtick: step, tickmode: 'array', tickvals: vals, ticktext: text,
             tickfont: { size: 10 } };
  }
  function drawChart(div, id, meta, si, byDate) {
    var s = meta.series[si], d = seriesData(id, meta, si), X = seriesX(d, byDate), xs = d.i.map(X);
    var sc = scaleFor(d.m, s.unit);  // the axis and the hovers share one unit
    function ys(v) { return v == null ? v : v / sc.f; }
    var custom = d.i.map(function (i, j) {
      var c = store.commits[i] || [];
      return [pe(shortSha(c[0])), pe(c[1] ? c[1].replace('T', ' ').replace('+00:00', ' UTC') : 'no date'),
              c[2] ? pe(c[2]) + '<br>' : '', pe(scaled(d.m[j], sc, s))];
    });
    var unit = pe(sc.unit);
    var traces = [];
    if (s.band) {
      traces.push({ x: xs, y: d.lo.map(ys), mode: 'lines', line: { width: 0 }, hoverinfo: 'skip', showlegend: false, name: 'band-low', type: 'scatter' });
      traces.push({ x: xs, y: d.hi.map(ys), mode: 'lines', line: { width: 0 }, fill: 'tonexty', fillcolor: COLORS.band, hoverinfo: 'skip',
        name: s.band === 'IQR' ? 'IQR (q1–q3)' : 'CI', type: 'scatter' });
    }
    traces.push({
      x: xs, y: d.m.map(ys), customdata: custom, mode: 'lines+markers', name: 'median', type: 'scatter',
      line: { color: COLORS.line, width: 1.6 }, marker: { size: 4, color: COLORS.line },
      hovertemplate: '<b>%{customdata[0]}</b>  %{customdata[1]}<br>%{customdata[2]}median %{customdata[3]}<extra></extra>'
    });
    var shapes = [], notes = [];
    meta.changes.forEach(function (c) {
      if (c.s !== si || c.after == null) return;
      var col = COLORS[c.kind] || COLORS.change;
      var x0 = c.before != null ? c.before : c.after;
      shapes.push({ type: 'rect', xref: 'x', yref: 'paper', x0: X(x0), x1: X(c.after), y0: 0, y1: 1, fillcolor: col, opacity: 0.12, line: { width: 0 } });
      shapes.push({ type: 'line', xref: 'x', yref: 'paper', x0: X(c.after), x1: X(c.after), y0: 0, y1: 1, line: { color: col, width: 1.5, dash: 'dot' } });
      notes.push({ x: X(c.after), y: 0.04, xref: 'x', yref: 'paper', yanchor: 'bottom', xanchor: 'right', showarrow: false,
        text: pe((c.event ? 'environment event' : c.kind) + ' ' + pct(c.ratio) + (c.persists ? '' : ' (gone)')), font: { color: col, size: 11 },
        bgcolor: 'rgba(255,255,255,0.85)', bordercolor: col, borderwidth: 1, borderpad: 2 });
    });
    (s.versions || []).forEach(function (v) {
      var vx = byDate ? X(v[0]) : Math.ceil(X(v[0])) - 0.5;
      shapes.push({ type: 'line', xref: 'x', yref: 'paper', x0: vx, x1: vx, y0: 0, y1: 1, line: { color: '#9ca3af', width: 1, dash: 'dash' } });
      // Inside the plot, under its top edge: the legend owns the band above the plot.
      notes.push({ x: vx, y: 1, xref: 'x', yref: 'paper', yanchor: 'top', xanchor: 'left', showarrow: false,
        text: pe('code version ' + String(v[1]).slice(0, 12)), font: { color: '#6b7280', size: 10 },
        bgcolor: 'rgba(255,255,255,0.85)' });
    });
    var title = s.section ? s.section + ' / ' + s.display : s.display;
    var layout = {
      title: { text: '<b>' + pe(title) + '</b> <span style="font-size:11px;color:#6b7280">[' + unit + ']' +
               (s.direction === 'lower' || s.direction === 'higher' ? ' · ' + pe(s.direction) + ' is better' : '') + '</span>',
               x: 0, xanchor: 'left', font: { size: 14 } },
      height: 300, margin: { l: 64, r: 16, t: 48, b: byDate ? 40 : 56 },
      xaxis: byDate
        ? { title: { text: 'commit date', font: { size: 11 } }, type: 'date', zeroline: false, gridcolor: '#eef0f3' }
        : commitAxis(d),
      yaxis: { title: { text: unit, font: { size: 11 } }, zeroline: false, gridcolor: '#eef0f3', rangemode: 'tozero' },
      hovermode: 'closest', hoverlabel: { align: 'left' }, showlegend: true, legend: { orientation: 'h', x: 1, xanchor: 'right', y: 1, yanchor: 'bottom', font: { size: 11 } },
      shapes: shapes, annotations: notes, paper_bgcolor: '#fff', plot_bgcolor: '#fff', font: { family: 'system-ui, sans-serif' }
    };
    div.setAttribute('data-points', String(d.i.length));
    div.setAttribute('data-series', String(si));
    return Plotly.newPlot(div, traces, layout, { displaylogo: false, responsive: true }).then(function () {
      div.on('plotly_click', function (ev) {
        var pt = ev.points && ev.points[0];
        if (!pt || pt.data.name !== 'median') return;
        var i = d.i[pt.pointIndex];
        showCommit(i, d.m[pt.pointIndex], s, profilesOf(meta, s)[i]);
      });
    });
  }

  function showCommit(i, value, s, profile) {
    var c = store.commits[i] || [], box = clear($('commit-detail'));
    box.hidden = false;
    var href = commitHref(c[0]);
    box.appendChild(el('div', null, [
      el('strong', { text: 'Commit ' }), el('code', { text: c[0] || '?' }), ' ', el('span', { cls: 'muted', text: c[1] || '' })
    ]));
    box.appendChild(el('div', { cls: 'message', text: c[2] || '' }));
    box.appendChild(el('div', null, [s.metric + ': median ' + withUnit(value, s) + '  ',
      href ? el('a', { href: href, target: '_blank', rel: 'noopener noreferrer', text: 'open commit ↗' }) : null]));
    if (profile) box.appendChild(el('div', { cls: 'profiles' }, ['callgrind profile of this point: ', profileLink(profile, profile.split('/').pop())]));
  }

  // The chosen case's kept callgrind profiles, newest first (every one is also a click on its point away).
  var PROFILES_LISTED = 20;
  function renderProfiles(meta, s) {
    var byPos = s ? profilesOf(meta, s) : {}, list = clear($('profiles'));
    var at = Object.keys(byPos).map(Number).sort(function (a, b) { return b - a; });
    $('profiles-section').hidden = !at.length;
    at.slice(0, PROFILES_LISTED).forEach(function (i) {
      var c = store.commits[i] || [];
      list.appendChild(el('li', null, [shaLink(c[0]), ' ', el('span', { cls: 'muted', text: (c[1] || '').slice(0, 10) + ' ' }),
        profileLink(byPos[i], byPos[i].split('/').slice(1).join('/'))]));
    });
    if (at.length > PROFILES_LISTED) {
      list.appendChild(el('li', { cls: 'muted', text: (at.length - PROFILES_LISTED) + ' older: click a point of the chart' }));
    }
  }

  function pageBenchmark() {
    var id = document.body.getAttribute('data-bench');
    if (!HEX_ID.test(id || '')) return fail(new Error('bad benchmark id'));
    load('data/b/' + id + '.meta.js').then(function () {
      var meta = store.meta[id];
      return loadAll(commitChunks().concat(meta.chunks.map(function (k) { return pointsFile(id, k); })))
        .then(function () { return meta; });
    }).then(function (meta) {
      buildSelectors(id, meta);
      renderChanges(meta);
    }).catch(fail);
  }

  // The series to open on: the first series' machine, in its environment with the most points (the per-commit
  // history, not the two commits of an A/B run).
  function fullest(id, meta) {
    var machine = meta.series[0].machine, total = {}, best = meta.series[0], most = -1;
    meta.series.forEach(function (s, si) {
      if (s.machine === machine) total[s.env] = (total[s.env] || 0) + seriesData(id, meta, si).i.length;
    });
    meta.series.forEach(function (s) {
      if (s.machine === machine && total[s.env] > most) { most = total[s.env]; best = s; }
    });
    return best;
  }

  function caseKey(s) { return JSON.stringify([s.machine, s.env, s.params]); }

  function buildSelectors(id, meta) {
    var box = clear($('selectors'));
    var dims = [{ key: 'machine', label: 'Machine', get: function (s) { return s.machine; } },
                { key: 'env', label: 'Environment', get: function (s) { return s.env; } }];
    var pnames = uniq([].concat.apply([], meta.series.map(function (s) { return Object.keys(s.params); })));
    pnames.forEach(function (p) { dims.push({ key: 'p:' + p, label: p, get: function (s) { return s.params[p] == null ? '' : s.params[p]; } }); });
    var first = fullest(id, meta);
    var wanted = new URLSearchParams(window.location.hash.slice(1));
    var sels = dims.map(function (dm) {
      var vals = uniq(meta.series.map(dm.get));
      var sel = el('select', { 'data-dim': dm.key });
      fillSelect(sel, vals, false);
      var w = wanted.get(dm.key);
      sel.value = w != null && vals.indexOf(w) >= 0 ? w : dm.get(first);
      var lab = el('label', { cls: vals.length > 1 ? '' : 'single' }, [dm.label + ' ', sel]);
      box.appendChild(lab);
      sel.addEventListener('input', function () { remember(); draw(); });
      return { dm: dm, sel: sel };
    });
    var dated = allDated();
    var byDate = el('input', { type: 'checkbox', id: 'by-date' });
    byDate.checked = dated && wanted.get('x') === 'date';
    if (dated) {
      box.appendChild(el('label', null, [byDate, ' by date']));
      byDate.addEventListener('input', function () { remember(); draw(); });
    }
    function remember() {
      var q = new URLSearchParams();
      sels.forEach(function (x) { q.set(x.dm.key, x.sel.value); });
      if (byDate.checked) q.set('x', 'date');
      history.replaceState(null, '', '#' + q.toString());
    }
    function draw() {
      var chosen = meta.series.map(function (s, si) { return si; }).filter(function (si) {
        return sels.every(function (x) { return x.dm.get(meta.series[si]) === x.sel.value; });
      });
      var charts = clear($('charts'));
      $('commit-detail').hidden = true;
      renderProfiles(meta, chosen.length ? meta.series[chosen[0]] : null);
      if (!chosen.length) { status('No series for this combination.'); return; }
      status('');
      // The primary metric (time per op) first, then the other timing metrics, then the rest, by name.
      function order(si) {
        var s = meta.series[si];
        return (s.section === 'timing' && s.name === 'time_per_op' ? '0' : s.section === 'timing' ? '1' : '2') + s.metric;
      }
      chosen.sort(function (a, b) { return order(a) < order(b) ? -1 : 1; });
      // A series that is zero at every commit (a counter this machine cannot read) folds into one line.
      var zeros = [];
      var group = null;
      chosen.forEach(function (si) {
        var m = seriesData(id, meta, si).m;
        if (m.length && m.every(function (v) { return v === 0; })) { zeros.push(meta.series[si]); return; }
        // A concurrent benchmark's roles (sections "role:NAME") each get a heading over their charts.
        var sec = meta.series[si].section || '';
        var g = sec.indexOf('role:') === 0 ? 'role ' + sec.slice(5) : (sec === 'scenario' ? 'scenario' : null);
        if (g !== null && g !== group) charts.appendChild(el('h3', { cls: 'role-group', text: g }));
        group = g;
        // A chart and the line under it stay one block: the page reads heading, chart, chart, ...
        var block = el('div', { cls: 'chart-block' });
        var div = el('div', { cls: 'chart' });
        block.appendChild(div);
        charts.appendChild(block);
        drawChart(div, id, meta, si, byDate.checked).catch(fail);
        var limit = limitText(meta.series[si]);
        if (limit) block.appendChild(el('p', { cls: 'hint detection-limit', text: limit }));
      });
      if (zeros.length) {
        charts.appendChild(el('p', { cls: 'muted zero-series', text: zeros.length + ' series zero at every commit, not drawn: ' +
          zeros.map(function (z) { return z.section ? z.section + ' / ' + z.display : z.display; }).join(', ') }));
      }
    }
    draw();
  }

  // The smallest step the series shows 80% of the time (analysis/detection_limit.py), under its chart.
  function limitText(s) {
    var l = s.limit;
    if (!l) return '';
    if (l.too_noisy === null) return s.display + ': too few commits to state the smallest step it can see.';
    function p(x) { return x === null ? 'none up to x16' : (100 * x).toFixed(1) + '%'; }
    return s.display + ': smallest step seen 80% of the time: ' + p(l.one_commit) + ' at one commit, ' +
      p(l.confirmed) + ' confirmed' + (l.too_noisy ? '; too noisy to see a 10% change.' : '.');
  }

  function renderChanges(meta) {
    var rows = meta.changes;
    if (!rows.length) { $('changes-section').hidden = true; return; }
    table($('changes'), ['Metric', 'Machine', 'Environment', 'Params', 'Change', 'Started in', 'Persists'], rows.map(function (c) {
      var s = meta.series[c.s];
      return { cls: c.event ? 'event' : c.kind, cells: [s.metric, s.machine, s.env, paramsText(s.params),
        c.event ? el('span', { title: c.event }, [badge('environment event'), ' ' + pct(c.ratio) + ': ' + c.event])
          : el('span', null, [badge(c.kind), ' ' + pct(c.ratio)]),
        el('span', { cls: 'nowrap' }, [shaLink(c.before_sha), ' … ', shaLink(c.after_sha)]), c.persists ? 'yes' : 'no'] };
    }));
  }

  // ---- compare ----
  function pageCompare() {
    loadAll(['data/index.js'].concat(commitChunks())).then(function () {
      var n = store.site.n_commits, a = $('commit-a'), b = $('commit-b');
      [a, b].forEach(function (sel) {
        for (var i = n - 1; i >= 0; i--) {
          var c = store.commits[i] || [];
          sel.appendChild(el('option', { value: String(i), text: shortSha(c[0]) + '  ' + (c[1] || '').slice(0, 10) + '  ' + String(c[2] || '').slice(0, 60) }));
        }
      });
      var q = new URLSearchParams(window.location.search);
      function find(sha) { for (var i = 0; i < n; i++) if (sha && store.commits[i] && store.commits[i][0].indexOf(sha) === 0) return i; return -1; }
      var ia = find(q.get('a')), ib = find(q.get('b'));
      a.value = String(ia >= 0 ? ia : Math.max(0, n - 2));
      b.value = String(ib >= 0 ? ib : n - 1);
      [a, b, $('search')].forEach(function (x) { x.addEventListener('input', render); });
      [a, b].forEach(function (x) { x.addEventListener('input', function () {
        var q2 = new URLSearchParams();
        q2.set('a', store.commits[+a.value][0]); q2.set('b', store.commits[+b.value][0]);
        history.replaceState(null, '', '?' + q2.toString());
      }); });
      render();
      function render() {
        var pa = +a.value, pb = +b.value, size = store.site.chunk;
        var ids = store.index.map(function (r) { return r.id; }).filter(function (x) { return HEX_ID.test(x); });
        $('summary').textContent = 'Loading…';
        loadAll(['data/verdicts.js'].concat(ids.map(function (x) { return 'data/b/' + x + '.meta.js'; }))).then(function () {
          var srcs = [];
          ids.forEach(function (x) {
            var ch = store.meta[x].chunks;
            [Math.floor(pa / size), Math.floor(pb / size)].forEach(function (k) { if (ch.indexOf(k) >= 0) srcs.push(pointsFile(x, k)); });
          });
          return loadAll(srcs);
        }).then(function () {
          var rows = [], qq = $('search').value.toLowerCase();
          ids.forEach(function (x) {
            var meta = store.meta[x];
            if (qq && meta.name.toLowerCase().indexOf(qq) < 0) return;
            meta.series.forEach(function (s, si) {
              var va = valueAt(x, si, pa), vb = valueAt(x, si, pb);
              if (va == null || vb == null) return;
              var ratio = va !== 0 ? vb / va : null;
              var worse = ratio == null ? 0 : (s.direction === 'higher' ? 1 / ratio : s.direction === 'lower' ? ratio : 1);
              // mmtrack compare's verdict, computed at publish time for each newest commit against the one before
              var v = ((store.verdicts[x] || [])[si] || []).filter(function (t) { return t[0] === pa && t[1] === pb; })[0];
              rows.push({ x: x, meta: meta, s: s, va: va, vb: vb, ratio: ratio, worse: worse,
                          verdict: v ? v[2] : null, state: v ? v[3] : null });
            });
          });
          // As mmtrack compare lists them (store.site.verdict_order, analysis.policy.VERDICT_ORDER): by verdict, then
          // worst change first; a row without a verdict goes with the unchanged.
          var order = store.site.verdict_order || [];
          var rank = function (r) { var i = order.indexOf(r.verdict || 'unchanged'); return i < 0 ? order.length : i; };
          rows.sort(function (r1, r2) { return rank(r1) - rank(r2) || r2.worse - r1.worse; });
          var judged = rows.filter(function (r) { return r.verdict; });
          var count = function (v) { return judged.filter(function (r) { return r.verdict === v; }).length; };
          $('summary').textContent = rows.length + ' series measured at both commits, ' +
            (judged.length ? 'by verdict, then ' : '') + 'worst change first; ' + (judged.length ?
            'verdicts of mmtrack compare ' + shortSha(store.commits[pa][0]) + ' ' + shortSha(store.commits[pb][0]) + ': ' +
            count('regressed') + ' regressed, ' + count('improved') + ' improved, ' + (judged.length - count('regressed') - count('improved')) + ' other' :
            'no verdicts for this pair (the pages judge each series\' newest commits against the commit before; run mmtrack compare ' +
            shortSha(store.commits[pa][0]) + ' ' + shortSha(store.commits[pb][0]) + ')');
          table($('compare'), ['Benchmark', 'Machine', 'Environment', 'Params', 'Metric', 'Base', 'Head', 'Change', 'Verdict'], rows.map(function (r) {
            var cls = r.verdict === 'regressed' ? 'regression' : r.verdict === 'improved' ? 'improvement' : '';
            var sc = scaleFor([r.va, r.vb], r.s.unit);  // one scale for both values
            return { cls: cls, cells: [benchLink(benchHref(r.x, r.s), r.meta.name), r.s.machine, r.s.env, paramsText(r.s.params), r.s.metric,
              el('span', { cls: 'nowrap', text: scaled(r.va, sc, r.s) }), el('span', { cls: 'nowrap', text: scaled(r.vb, sc, r.s) }),
              pct(r.ratio), r.verdict ? verdictText(r.verdict, r.state) : '']};
          }));
        }).catch(fail);
      }
    }).catch(fail);
  }

  function valueAt(id, si, i) {
    var k = Math.floor(i / store.site.chunk), ch = store.points[id] && store.points[id][k];
    var c = ch && ch[si];
    if (!c) return null;
    var j = c.i.indexOf(i);
    return j >= 0 ? c.m[j] : null;
  }

  function fail(err) {
    status('Error: ' + (err && err.message ? err.message : err));
    console.error(err);
  }

  document.addEventListener('DOMContentLoaded', function () {
    var page = document.body.getAttribute('data-page');
    if (store.site && store.site.title) document.querySelector('.brand').textContent = store.site.title;
    ({ index: pageIndex, regressions: pageRegressions, benchmark: pageBenchmark, compare: pageCompare }[page] || function () {})();
  });
})();
