// Shared by the allocation preloads (bench/alloc/preload.mjs, bench/alloc/promoted.mjs): diagnostics only.
import dc from 'node:diagnostics_channel';

/**
 * The requests a preload measures, and its windows: `POST` requests whose URL contains `path`, counted
 * from the `warmup`-th on (`node:diagnostics_channel`). A window opens with the first of them
 * (`openWindow`, when `isOpen()` is false) and closes `tailMs` after the last response finished
 * (`closeWindow`, which the preload also calls at SIGTERM). `onStart` / `onFinish(request, response)`
 * run for each measured request inside a window. Returns the count of measured requests
 * (`.requests`).
 */
export function measureRequests({
  path,
  warmup,
  tailMs,
  isOpen,
  openWindow,
  closeWindow,
  onStart,
  onFinish,
}) {
  let seen = 0;
  const counted = { requests: 0 };
  const tail = setTimeout(closeWindow, tailMs);
  tail.unref();
  const isMeasured = (req) => req.method === 'POST' && req.url?.includes(path);
  dc.subscribe('http.server.request.start', ({ request, response }) => {
    if (!isMeasured(request)) return;
    seen++;
    if (seen <= warmup) return;
    if (!isOpen()) openWindow();
    counted.requests++;
    tail.refresh();
    onStart?.(request, response);
  });
  dc.subscribe('http.server.response.finish', ({ request, response }) => {
    if (!isOpen() || !isMeasured(request)) return;
    tail.refresh();
    onFinish?.(request, response);
  });
  return counted;
}

/**
 * Self bytes per top frame of a sampling profile (V8 names a function by where it starts, so a
 * frame is a function, not a line); a native frame (no script: a builtin such as `Promise` or
 * `slice`) is named with its first JS caller (`slice ← caller`) and placed at that caller. `via`: the
 * first caller outside Node's own modules (what in the app or a package made Node allocate).
 */
export function sampled(profile) {
  const byNode = new Map();
  const walk = (node, parent) => {
    byNode.set(node.id, { frame: node.callFrame, parent });
    for (const child of node.children) walk(child, node.id);
  };
  walk(profile.head, null);
  const up = (n) => (n.parent === null ? null : byNode.get(n.parent));
  const total = new Map();
  for (const s of profile.samples) {
    let n = byNode.get(s.nodeId);
    let fn = n.frame.functionName || '(anonymous)';
    if (n.frame.url === '') {
      let caller = up(n);
      while (caller && caller.frame.url === '') caller = up(caller);
      if (caller) {
        n = caller;
        fn = `${fn} ← ${n.frame.functionName || '(anonymous)'}`;
      }
    }
    const f = n.frame;
    let via = n;
    while (via && (via.frame.url === '' || via.frame.url.startsWith('node:'))) via = up(via);
    const v = via && via !== n ? via.frame : null;
    const viaKey = v
      ? `${v.functionName || '(anonymous)'}\t${v.url}\t${v.lineNumber}\t${v.columnNumber}`
      : '\t\t\t';
    const key = `${fn}\t${f.url}\t${f.lineNumber}\t${f.columnNumber}\t${viaKey}`;
    total.set(key, (total.get(key) ?? 0) + s.size);
  }
  return total;
}
