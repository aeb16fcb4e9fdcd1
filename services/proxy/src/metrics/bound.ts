import type { Registry } from 'prom-client';

/**
 * Counters and histograms for the proxy's per-request metrics whose label children are bound once
 * and then updated without allocating (issue 11: prom-client's `labels(...).observe(v)` builds a
 * label object and a hash string on every call — ≈ 5 KB of V8 heap per chat request for the proxy's
 * ten observations). A child is found by its label values through one Map per label (no key string),
 * and holds its own counts.
 *
 * They register in a prom-client `Registry` like prom-client's own metrics and expose the same
 * series, in the same order, through the same `get()` shape (so `registry.metrics()`, the JSON the
 * cluster primary aggregates and `resetMetrics()` behave alike; bound.test.ts compares the text and
 * the JSON with prom-client's for the same observations). Label values are the caller's bounded sets
 * (route names, catalog models and providers, HTTP statuses), never ids.
 */

type Labels = Record<string, string>;
interface Value {
  value: number;
  labels: Labels;
  metricName?: string;
  exemplar?: null;
}
interface MetricData {
  name: string;
  help: string;
  type: string;
  values: Value[];
  aggregator: string;
}

/** Children by label values: one Map level per label (a lookup allocates nothing). */
class Children<C> {
  private readonly root = new Map<string, unknown>();
  readonly all: C[] = [];

  constructor(
    private readonly arity: number,
    private readonly make: (values: string[]) => C,
  ) {
    // A metric without labels has its one series from the start (as prom-client's).
    if (arity === 0) this.get('', '', '', '');
  }

  get(a: string, b: string, c: string, d: string): C {
    const n = this.arity;
    let level: Map<string, unknown> = this.root;
    for (let i = 0; i < n - 1; i++) {
      const key = i === 0 ? a : i === 1 ? b : c;
      let next = level.get(key) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map<string, unknown>();
        level.set(key, next);
      }
      level = next;
    }
    const key = n <= 1 ? a : n === 2 ? b : n === 3 ? c : d;
    let child = level.get(key) as C | undefined;
    if (child === undefined) {
      child = this.make([a, b, c, d].slice(0, n));
      level.set(key, child);
      this.all.push(child);
    }
    return child;
  }

  /** `plain`: a metric without labels gets its series back at zero (prom-client's counters do, its histograms do not). */
  clear(plain: boolean): void {
    this.root.clear();
    this.all.length = 0;
    if (plain && this.arity === 0) this.get('', '', '', '');
  }
}

function labelsOf(names: readonly string[], values: string[]): Labels {
  const labels: Labels = {};
  names.forEach((name, i) => {
    labels[name] = values[i] as string;
  });
  return labels;
}

abstract class BoundMetric {
  readonly aggregator = 'sum';
  abstract readonly type: string;

  constructor(
    public name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    if (labelNames.length > 4) throw new Error(`${name}: at most 4 labels`);
    // prom-client's Registry reads name, help, type, aggregator, get() and reset() of a metric.
    registry.registerMetric(this as never);
  }

  abstract get(): Promise<MetricData>;
  abstract reset(): void;
}

export interface CounterChild {
  inc(value?: number): void;
}

class CounterValue implements CounterChild {
  value = 0;
  constructor(readonly labels: Labels) {}

  inc(value = 1): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    if (value < 0) throw new Error('It is not possible to decrease a counter');
    this.value += value;
  }
}

export class BoundCounter extends BoundMetric {
  readonly type = 'counter';
  private readonly children = new Children<CounterValue>(
    this.labelNames.length,
    (values) => new CounterValue(labelsOf(this.labelNames, values)),
  );

  /** The child of these label values (as many as the metric's labels), bound once. */
  labels(a = '', b = '', c = '', d = ''): CounterChild {
    return this.children.get(a, b, c, d);
  }

  /** A metric without labels: its one series. */
  inc(value = 1): void {
    this.children.get('', '', '', '').inc(value);
  }

  async get(): Promise<MetricData> {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.children.all.map((c) => ({ value: c.value, labels: { ...c.labels } })),
    };
  }

  reset(): void {
    this.children.clear(true);
  }
}

export interface HistogramChild {
  observe(value: number): void;
}

class HistogramValue implements HistogramChild {
  /** Observations per bucket (the first upper bound ≥ the value), not yet cumulative. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    private readonly upperBounds: readonly number[],
  ) {
    this.counts = new Float64Array(upperBounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        (this.counts[i] as number)++;
        break;
      }
    }
    this.sum += value;
    this.count += 1;
  }
}

export class BoundHistogram extends BoundMetric {
  readonly type = 'histogram';
  private readonly children: Children<HistogramValue>;

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly upperBounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
    if (labelNames.includes('le')) throw new Error('le is a reserved label keyword');
    this.children = new Children<HistogramValue>(
      labelNames.length,
      (values) => new HistogramValue(labelsOf(labelNames, values), upperBounds),
    );
  }

  /** The child of these label values (as many as the metric's labels), bound once. */
  labels(a = '', b = '', c = '', d = ''): HistogramChild {
    return this.children.get(a, b, c, d);
  }

  /** A metric without labels: its one series. */
  observe(value: number): void {
    this.children.get('', '', '', '').observe(value);
  }

  async get(): Promise<MetricData> {
    const values: Value[] = [];
    const bucket = `${this.name}_bucket`;
    for (const c of this.children.all) {
      let acc = 0;
      this.upperBounds.forEach((le, i) => {
        acc += c.counts[i] as number;
        values.push({
          value: acc,
          labels: { le, ...c.labels } as unknown as Labels,
          metricName: bucket,
          exemplar: null,
        });
      });
      values.push(
        { value: c.count, labels: { le: '+Inf', ...c.labels }, metricName: bucket, exemplar: null },
        { value: c.sum, labels: { ...c.labels }, metricName: `${this.name}_sum`, exemplar: undefined },
        { value: c.count, labels: { ...c.labels }, metricName: `${this.name}_count`, exemplar: undefined },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.children.clear(false);
  }
}
