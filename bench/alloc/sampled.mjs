// Shared by the allocation preloads (bench/alloc/preload.mjs, bench/alloc/promoted.mjs): diagnostics only.

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
