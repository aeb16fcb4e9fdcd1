/**
 * infra/k8s: every overlay is rendered by a real `kubectl kustomize` (kubectl 1.35 from an npm
 * package, tests/support/kubectl.ts), every rendered object is validated against the Kubernetes API
 * schemas (`kubernetes-models`), and the wiring is checked: each service's Deployment sets every
 * variable its own config schema needs (derived from the schema, not listed here) and its config
 * parses in production mode from the rendered ConfigMaps and Secrets; probes, resources, graceful
 * termination, HPA/PDB and the catalog copies.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServiceSigner, createServiceVerifier, DEV_SERVICE_KEYS, SERVICE_NAMES } from '@tollgate/auth';
import { usageTopology } from '@tollgate/events';
import * as appsV1 from 'kubernetes-models/apps/v1';
import * as autoscalingV2 from 'kubernetes-models/autoscaling/v2';
import * as batchV1 from 'kubernetes-models/batch/v1';
import * as networkingV1 from 'kubernetes-models/networking.k8s.io/v1';
import * as policyV1 from 'kubernetes-models/policy/v1';
import * as coreV1 from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { listServices } from '../infra/build/build';
import { rabbitmqPermissions } from '../infra/credentials/policy.mjs';
import { kubectlPath } from './support/kubectl';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const k8s = resolve(root, 'infra/k8s');
const overlays = readdirSync(join(k8s, 'overlays'));
/** Services deployed by the base (provider-sim is a development tool: demo overlay only). */
const deployed = listServices().filter((s) => s !== 'provider-sim');

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are free-form YAML
type Obj = any;

const models: Record<string, Record<string, unknown>> = {
  v1: coreV1,
  'apps/v1': appsV1,
  'batch/v1': batchV1,
  'autoscaling/v2': autoscalingV2,
  'policy/v1': policyV1,
  'networking.k8s.io/v1': networkingV1,
};

let work: string;
const rendered = new Map<string, Obj[]>();

function fillEnvFile(path: string) {
  // What an operator does: copy the example and fill in every empty value and every change-me
  // password (here: random secrets, a different one each).
  const text = readFileSync(`${path}.example`, 'utf8')
    .replace(/^([A-Z0-9_]+)=$/gm, (_m, k: string) => `${k}=${randomBytes(32).toString('hex')}`)
    .replace(/change-me/g, () => randomBytes(18).toString('hex'));
  writeFileSync(path, text);
}

beforeAll(() => {
  const kubectl = kubectlPath();
  work = mkdtempSync(join(tmpdir(), 'tollgate-k8s-'));
  cpSync(k8s, join(work, 'k8s'), { recursive: true });
  for (const overlay of overlays) {
    const dir = join(work, 'k8s/overlays', overlay);
    for (const f of readdirSync(dir)) if (f.endsWith('.env.example')) fillEnvFile(join(dir, f.slice(0, -8)));
    // What the operator runs for every overlay: its own service keys (never shipped).
    execFileSync(process.execPath, [resolve(root, 'infra/keys/service-keys.mjs'), '--env', dir]);
    const out = execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const objs = parseAllDocuments(out)
      .map((d) => d.toJS() as Obj)
      .filter(Boolean);
    // kustomize wraps long base64 values over lines; the API server's base64 decoding skips newlines.
    for (const o of objs) {
      if (o.kind !== 'Secret') continue;
      for (const [k, v] of Object.entries(o.data ?? {})) o.data[k] = String(v).replace(/\s+/g, '');
    }
    rendered.set(overlay, objs);
  }
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const find = (objs: Obj[], kind: string, name: string): Obj | undefined =>
  objs.find((o) => o.kind === kind && o.metadata?.name === name);

/** A Deployment's ConfigMap/Secret by the name the pod refers to (kustomize already put in hashes). */
function data(objs: Obj[], kind: 'ConfigMap' | 'Secret', name: string): Record<string, string> | undefined {
  const o = find(objs, kind, name);
  if (!o) return undefined;
  if (kind === 'ConfigMap') return { ...(o.data ?? {}) };
  const out: Record<string, string> = { ...(o.stringData ?? {}) };
  for (const [k, v] of Object.entries(o.data ?? {}))
    out[k] = Buffer.from(String(v), 'base64').toString('utf8');
  return out;
}

/** The environment a container gets, resolved against the rendered objects (missing refs throw). */
function containerEnv(objs: Obj[], container: Obj): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    const d = data(objs, from.configMapRef ? 'ConfigMap' : 'Secret', ref.name);
    if (!d) {
      if (ref.optional) continue;
      throw new Error(`envFrom ${ref.name} is not rendered`);
    }
    Object.assign(env, d);
  }
  for (const e of container.env ?? []) {
    if ('value' in e) env[e.name] = String(e.value);
    else {
      const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
      const d = data(objs, e.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap', ref?.name);
      const v = d?.[ref?.key];
      if (v === undefined) throw new Error(`${e.name}: ${ref?.name}/${ref?.key} is not rendered`);
      env[e.name] = v;
    }
  }
  // Dependent variables, as the kubelet expands them: `$(NAME)` of a variable defined earlier.
  for (const e of container.env ?? []) {
    if ('value' in e)
      env[e.name] = String(e.value).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, n: string) => env[n] ?? m);
  }
  return env;
}

interface EnvSchema {
  shape: Record<string, { safeParse(v: unknown): { success: boolean; data?: unknown } }>;
  safeParse(v: unknown): unknown;
}
interface ConfigModule {
  schema: EnvSchema;
  load: (env: NodeJS.ProcessEnv) => unknown;
}

/** A service's env schema and loader, found in its src/config.ts by shape (works for any service). */
async function configOf(service: string): Promise<ConfigModule> {
  const mod = (await import(`../services/${service}/src/config.ts`)) as Record<string, unknown>;
  const schema = Object.values(mod).find(
    (v): v is EnvSchema => typeof v === 'object' && v !== null && 'shape' in v && 'safeParse' in v,
  );
  const load = mod.loadConfig as ConfigModule['load'] | undefined;
  if (!schema || !load) throw new Error(`services/${service}/src/config.ts exports no env schema/loadConfig`);
  return { schema, load };
}

/**
 * The variables a deployment must set, derived from the schema: those without a usable default
 * (absent, the production config does not load) and those whose default points at this machine
 * (a localhost URL, a path into the repository).
 */
function requiredVars(config: ConfigModule, env: Record<string, string>): string[] {
  return Object.keys(config.schema.shape).filter((key) => {
    const parsed = config.schema.shape[key]!.safeParse(undefined);
    if (!parsed.success) return true;
    const def = String(parsed.data ?? '');
    // METRICS_HOST's 127.0.0.1 is where a listener binds, not a dependency's address (the main
    // containers' METRICS_HOST is checked on its own below).
    if (key !== 'METRICS_HOST' && /127\.0\.0\.1|localhost|\/infra\/catalog\//.test(def)) return true;
    const without: Record<string, string> = { ...env, NODE_ENV: 'production' };
    delete without[key];
    try {
      config.load(without);
      return false;
    } catch {
      return true;
    }
  });
}

describe.each(overlays)('overlay %s', (overlay) => {
  const objs = () => rendered.get(overlay) ?? [];

  it('renders and every object validates against the Kubernetes schemas', () => {
    expect(objs().length).toBeGreaterThan(5);
    for (const o of objs()) {
      const Model = models[o.apiVersion]?.[o.kind] as (new (d: unknown) => { validate(): void }) | undefined;
      expect(Model, `${o.apiVersion} ${o.kind} has a schema`).toBeDefined();
      expect(() => new Model!(o).validate(), `${o.kind}/${o.metadata?.name}`).not.toThrow();
      if (o.kind !== 'Namespace') expect(o.metadata?.namespace, `${o.kind}/${o.metadata?.name}`).toBeTruthy();
    }
  });

  it('a broken manifest fails the schema check (the check can fail)', () => {
    const proxy = structuredClone(find(objs(), 'Deployment', 'proxy'));
    proxy.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
    expect(() => new appsV1.Deployment(proxy).validate()).toThrow(/containerPort/);
  });

  it.each(deployed)(
    'deploys %s with probes, resources, a non-root read-only container and its config',
    async (name) => {
      const dep = find(objs(), 'Deployment', name);
      expect(dep, `Deployment ${name}`).toBeDefined();
      const pod = dep.spec.template.spec;
      const main = pod.containers.find((c: Obj) => c.name === name);
      expect(main.command ?? main.args).toEqual(['node', 'dist/main.js']);
      const port = main.ports[0].containerPort;
      const env = containerEnv(objs(), main);
      expect(Number(env.PORT)).toBe(port);
      // Metrics on their own port: declared, annotated for Prometheus, never behind the Service.
      const metricsPort = main.ports.find((p: Obj) => p.name === 'metrics')?.containerPort;
      expect(metricsPort, `${name} metrics port`).toBeGreaterThan(0);
      expect(Number(env.METRICS_PORT)).toBe(metricsPort);
      expect(env.METRICS_HOST).toBe('0.0.0.0');
      expect(dep.spec.template.metadata.annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(metricsPort),
      });
      const service = find(objs(), 'Service', name);
      if (service) {
        for (const p of service.spec.ports) {
          expect(p.targetPort, `${name} Service exposes metrics`).not.toBe('metrics');
          expect(p.targetPort).not.toBe(metricsPort);
        }
      }
      expect(main.livenessProbe.httpGet).toMatchObject({ path: '/healthz' });
      expect(main.readinessProbe.httpGet).toMatchObject({ path: '/readyz' });
      for (const probe of [main.livenessProbe, main.readinessProbe, main.startupProbe]) {
        const p = probe.httpGet.port;
        expect(typeof p === 'number' ? p : main.ports.find((x: Obj) => x.name === p)?.containerPort).toBe(
          port,
        );
      }
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        expect(c.resources?.requests?.cpu, `${c.name} cpu request`).toBeTruthy();
        expect(c.resources?.requests?.memory, `${c.name} memory request`).toBeTruthy();
        expect(c.resources?.limits?.memory, `${c.name} memory limit`).toBeTruthy();
        expect(c.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
        });
      }
      expect(pod.securityContext.runAsNonRoot).toBe(true);

      // Every variable the service's config schema requires is set, and the config loads in production.
      const config = await configOf(name);
      for (const c of [main, ...(pod.initContainers ?? [])]) {
        const cenv = containerEnv(objs(), c);
        for (const key of requiredVars(config, cenv))
          expect(cenv, `${name}/${c.name} needs ${key}`).toHaveProperty(key);
        expect(cenv.NODE_ENV).toBe('production');
        expect(() => config.load(cenv), `${name}/${c.name} config`).not.toThrow();
      }

      // Internal URLs point at a rendered Service on the port its pods listen on.
      for (const [key, value] of Object.entries(env)) {
        if (!/_URL$/.test(key) || !/^https?:\/\//.test(value)) continue;
        const url = new URL(value);
        if (!/^[a-z0-9-]+$/.test(url.hostname)) continue; // external (production: managed servers)
        const svc = find(objs(), 'Service', url.hostname);
        expect(svc, `${name} ${key}=${value}`).toBeDefined();
        expect(svc.spec.ports.map((p: Obj) => p.port)).toContain(Number(url.port || 80));
      }

      // Migrations run before the service (safe in parallel: tests/build.test.ts).
      if (readdirSync(resolve(root, 'services', name, 'src')).includes('migrate.ts')) {
        expect(pod.initContainers?.map((c: Obj) => c.command)).toContainEqual(['node', 'dist/migrate.js']);
      }
      const svc = find(objs(), 'Service', name);
      expect(svc?.spec.selector).toEqual(dep.spec.selector.matchLabels);
    },
  );

  it('ships no service key: every pod gets only its own private key, its callers trust it, nothing from the dev set', async () => {
    const rendered = JSON.stringify(objs());
    for (const name of SERVICE_NAMES) {
      expect(rendered).not.toContain(DEV_SERVICE_KEYS[name].privateKey);
      expect(rendered).not.toContain(Buffer.from(DEV_SERVICE_KEYS[name].publicKey).toString('base64'));
    }
    expect(rendered).not.toMatch(/SERVICE_JWT_SECRET|ADMIN_PRIVATE_KEY/);
    const own: Record<string, string | null> = {
      proxy: 'PROXY_PRIVATE_KEY',
      keys: 'KEYS_PRIVATE_KEY',
      dashboard: 'DASHBOARD_PRIVATE_KEY',
      billing: 'BILLING_PRIVATE_KEY',
    };
    const envs: Record<string, Record<string, string>> = {};
    for (const [name, key] of Object.entries(own)) {
      const pod = find(objs(), 'Deployment', name).spec.template.spec;
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        const refs = (c.env ?? [])
          .map((e: Obj) => e.valueFrom?.secretKeyRef?.key)
          .filter((k: string | undefined) => k?.endsWith('_PRIVATE_KEY'));
        expect(refs, `${name}/${c.name}`).toEqual(key ? [key] : []);
      }
      envs[name] = containerEnv(objs(), pod.containers[0]);
    }
    // Each caller's key signs tokens its callees accept; anyone else's is refused.
    const signers = Object.fromEntries(
      (['proxy', 'keys', 'billing', 'dashboard'] as const).map((n) => [
        n,
        createServiceSigner(n, envs[n]!.SERVICE_PRIVATE_KEY!),
      ]),
    );
    const trusted = {
      keys: ['proxy', 'dashboard', 'billing'],
      billing: ['proxy', 'keys', 'dashboard'],
      dashboard: ['keys'],
    };
    for (const [callee, callers] of Object.entries(trusted) as Array<
      ['keys' | 'billing' | 'dashboard', string[]]
    >) {
      const verifier = createServiceVerifier(callee, envs[callee]!.SERVICE_PUBLIC_KEYS!);
      for (const [caller, signer] of Object.entries(signers)) {
        expect(
          (await verifier.verify(await signer.sign(callee)))?.caller ?? null,
          `${caller} → ${callee}`,
        ).toBe(callers.includes(caller) ? caller : null);
      }
    }
  });

  it('drains the proxy: preStop, then SHUTDOWN_TIMEOUT_MS, within terminationGracePeriodSeconds', () => {
    const pod = find(objs(), 'Deployment', 'proxy').spec.template.spec;
    const main = pod.containers[0];
    const env = containerEnv(objs(), main);
    const preStop = Number(main.lifecycle.preStop.exec.command.at(-1));
    const shutdown = Number(env.SHUTDOWN_TIMEOUT_MS) / 1000;
    expect(shutdown).toBeGreaterThanOrEqual(120);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStop + shutdown);
    expect(env.SPOOL_DIR).toBeTruthy();
    expect(main.volumeMounts.map((m: Obj) => m.mountPath)).toContain(env.SPOOL_DIR);
  });

  it('scales the proxy with an HPA and protects it with a PodDisruptionBudget', () => {
    const hpa = find(objs(), 'HorizontalPodAutoscaler', 'proxy');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'proxy' });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    const pdb = find(objs(), 'PodDisruptionBudget', 'proxy');
    const labels = find(objs(), 'Deployment', 'proxy').spec.template.metadata.labels;
    for (const [k, v] of Object.entries(pdb.spec.selector.matchLabels)) expect(labels[k]).toBe(v);
  });

  it.each(['proxy', 'billing'])('mounts the catalog ConfigMap where CATALOG_PATH points (%s)', (name) => {
    const pod = find(objs(), 'Deployment', name).spec.template.spec;
    const catalogPath = containerEnv(objs(), pod.containers[0]).CATALOG_PATH ?? '';
    const mount = pod.containers[0].volumeMounts.find((m: Obj) => catalogPath.startsWith(`${m.mountPath}/`));
    const volume = pod.volumes.find((v: Obj) => v.name === mount?.name);
    const catalog = data(objs(), 'ConfigMap', volume?.configMap?.name);
    expect(catalog?.[catalogPath.slice(mount.mountPath.length + 1)]).toBeTruthy();
  });
});

/** One end of a connection, as NetworkPolicies see it. */
interface Endpoint {
  name: string;
  labels: Record<string, string>;
  /** In another namespace (Prometheus, the cluster DNS). */
  otherNamespace?: boolean;
  /** Outside the cluster (clients, model providers, managed servers): matched by ipBlock only. */
  external?: boolean;
  /** Named container ports (a rule may name one). */
  ports?: Record<string, number>;
}

function selects(selector: Obj | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = e.key in labels;
    if (e.operator === 'In' && !(has && e.values.includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && e.values.includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

function peerMatches(peer: Obj, e: Endpoint): boolean {
  if (peer.ipBlock) return Boolean(e.external); // 0.0.0.0/0 in these manifests: addresses outside the cluster
  if (e.external) return false;
  if (e.otherNamespace && !peer.namespaceSelector) return false;
  return selects(peer.podSelector, e.labels);
}

function portMatches(ports: Obj[] | undefined, port: number, target: Endpoint): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => (typeof p.port === 'string' ? target.ports?.[p.port] === port : p.port === port));
}

/** Whether the NetworkPolicies let `from` open a TCP connection to `to`:`port` (egress and ingress). */
function allowed(objs: Obj[], from: Endpoint, to: Endpoint, port: number): boolean {
  const policies = objs.filter((o) => o.kind === 'NetworkPolicy');
  /** `pod`'s policies of this type let `peer` through (a pod no such policy selects is open). */
  const side = (type: 'Ingress' | 'Egress', pod: Endpoint, peer: Endpoint) => {
    if (pod.external || pod.otherNamespace) return true; // not policed by these manifests
    const applying = policies.filter(
      (p) => (p.spec.policyTypes ?? ['Ingress']).includes(type) && selects(p.spec.podSelector, pod.labels),
    );
    if (applying.length === 0) return true;
    return applying.some((p) =>
      ((type === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? []).some((rule: Obj) => {
        const peers: Obj[] | undefined = type === 'Ingress' ? rule.from : rule.to;
        return portMatches(rule.ports, port, to) && (!peers || peers.some((x) => peerMatches(x, peer)));
      }),
    );
  };
  return side('Egress', from, to) && side('Ingress', to, from);
}

describe.each(overlays)('overlay %s: NetworkPolicies', (overlay) => {
  const objs = () => rendered.get(overlay) ?? [];
  const pod = (name: string): Endpoint => {
    const dep = find(objs(), 'Deployment', name);
    const ports: Record<string, number> = {};
    for (const c of dep?.spec.template.spec.containers ?? [])
      for (const p of c.ports ?? []) if (p.name) ports[p.name] = p.containerPort;
    return { name, labels: dep?.spec.template.metadata.labels ?? { 'app.kubernetes.io/name': name }, ports };
  };
  const external = (name: string): Endpoint => ({ name, labels: {}, external: true });
  /** The servers: pods in the demo, managed (outside the cluster) in production. */
  const server = (name: string) => (find(objs(), 'Deployment', name) ? pod(name) : external(name));
  const client = external('client');
  const prometheus: Endpoint = {
    name: 'prometheus',
    labels: { 'app.kubernetes.io/name': 'prometheus' },
    otherNamespace: true,
  };
  const dns: Endpoint = { name: 'dns', labels: { 'k8s-app': 'kube-dns' }, otherNamespace: true };

  it('deny by default, in both directions, for every pod', () => {
    const deny = objs().find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'default-deny');
    expect(deny?.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    expect(allowed(objs(), pod('proxy'), external('anywhere'), 22)).toBe(false);
  });

  it('opens exactly the paths each service needs', () => {
    const [proxy, keys, billing, dashboard] = ['proxy', 'keys', 'billing', 'dashboard'].map(
      pod,
    ) as Endpoint[];
    const [postgres, redis, rabbitmq] = ['postgres', 'redis', 'rabbitmq'].map(server) as Endpoint[];
    const yes: Array<[Endpoint, Endpoint, number]> = [
      [client, proxy!, 8080],
      [client, dashboard!, 8083],
      [proxy!, keys!, 8081],
      [proxy!, billing!, 8082],
      [dashboard!, keys!, 8081],
      [dashboard!, billing!, 8082],
      [keys!, billing!, 8082],
      [billing!, keys!, 8081],
      [keys!, dashboard!, 8083],
      [proxy!, redis!, 6379],
      [proxy!, rabbitmq!, 5672],
      [keys!, postgres!, 5432],
      [keys!, redis!, 6379],
      [billing!, postgres!, 5432],
      [billing!, redis!, 6379],
      [billing!, rabbitmq!, 5672],
      [dashboard!, postgres!, 5432],
      [proxy!, external('provider'), 443],
      [keys!, dns, 53],
    ];
    const no: Array<[Endpoint, Endpoint, number]> = [
      [client, keys!, 8081],
      [client, billing!, 8082],
      [proxy!, postgres!, 5432],
      [dashboard!, redis!, 6379],
      [dashboard!, rabbitmq!, 5672],
      [keys!, rabbitmq!, 5672],
      [billing!, external('provider'), 443],
      [dashboard!, external('anywhere'), 443],
      [keys!, proxy!, 8080],
      [proxy!, keys!, 9465],
    ];
    for (const [from, to, port] of yes)
      expect(allowed(objs(), from, to, port), `${from.name} → ${to.name}:${port}`).toBe(true);
    for (const [from, to, port] of no)
      expect(allowed(objs(), from, to, port), `${from.name} → ${to.name}:${port}`).toBe(false);
    if (find(objs(), 'Deployment', 'provider-sim')) {
      expect(allowed(objs(), proxy!, pod('provider-sim'), 8090)).toBe(true);
      expect(allowed(objs(), keys!, pod('provider-sim'), 8090)).toBe(false);
      expect(allowed(objs(), client, postgres!, 5432)).toBe(false);
    }
  });

  it('lets Prometheus reach each metrics port and nothing else; no one else reaches a metrics port', () => {
    for (const name of deployed) {
      const target = pod(name);
      const metrics = target.ports?.metrics ?? 0;
      expect(metrics, `${name} metrics port`).toBeGreaterThan(0);
      expect(allowed(objs(), prometheus, target, metrics), `prometheus → ${name}`).toBe(true);
      expect(allowed(objs(), client, target, metrics), `client → ${name} metrics`).toBe(false);
      const api = Object.entries(target.ports ?? {}).find(([n]) => n === 'http')?.[1] ?? 0;
      if (name !== 'proxy' && name !== 'dashboard')
        expect(allowed(objs(), prometheus, target, api), `prometheus → ${name} api`).toBe(false);
    }
  });

  it('gives no two services the same credential, and none an empty password', () => {
    const seen = new Map<string, string>();
    for (const name of deployed) {
      const dep = find(objs(), 'Deployment', name);
      const env = containerEnv(objs(), dep.spec.template.spec.containers[0]);
      for (const key of ['DATABASE_URL', 'REDIS_URL', 'AMQP_URL', 'SERVICE_PRIVATE_KEY']) {
        const value = env[key];
        if (value === undefined) continue;
        const credentials =
          key === 'SERVICE_PRIVATE_KEY'
            ? [value]
            : (() => {
                const u = new URL(value);
                expect(u.password, `${name} ${key} password`).not.toBe('');
                return [
                  `${key} user ${decodeURIComponent(u.username)}`,
                  `password ${decodeURIComponent(u.password)}`,
                ];
              })();
        for (const c of credentials) {
          expect(seen.get(c), `${name} ${key} shares a credential with ${seen.get(c)}`).toBeUndefined();
          seen.set(c, `${name} ${key}`);
        }
      }
    }
    // Every service that talks to a server has its own login there.
    expect([...seen.values()].filter((v) => v.endsWith('DATABASE_URL')).length).toBe(3 * 2);
  });
});

describe('overlays', () => {
  it("the demo's RabbitMQ users get exactly infra/credentials/policy.mjs's permissions (partition queues included)", () => {
    const script = readFileSync(
      resolve(root, 'infra/k8s/overlays/demo/server-init/rabbitmq-users.sh'),
      'utf8',
    );
    const quoted = (name: string) => new RegExp(`^${name}='([^']*)'$`, 'm').exec(script)?.[1];
    const policy = rabbitmqPermissions('tollgate');
    expect(quoted('usage')).toBe(policy.proxy.write);
    expect(quoted('billing')).toBe(policy.billing.read);
    const billing = new RegExp(policy.billing.read);
    for (const q of usageTopology('tollgate', 4).partitions) expect(billing.test(q.queue)).toBe(true);
    expect(billing.test('tollgate.billing.usage')).toBe(true);
    expect(billing.test('tollgate.billing.usagex')).toBe(false);
    expect(new RegExp(policy.proxy.configure).test('tollgate.billing.usage.p0')).toBe(false);
  });

  it('USAGE_PARTITIONS is one shared setting of proxy and billing (the config map), 1 by default', () => {
    const kustomization = readFileSync(resolve(root, 'infra/k8s/base/kustomization.yaml'), 'utf8');
    expect(kustomization).toMatch(/^\s+- USAGE_PARTITIONS=1$/m);
  });

  it('production references external servers and runs no provider-sim; demo brings all of them', () => {
    const prod = rendered.get('production') ?? [];
    const demo = rendered.get('demo') ?? [];
    for (const server of ['postgres', 'redis', 'rabbitmq', 'provider-sim']) {
      expect(find(prod, 'Deployment', server), `production ${server}`).toBeUndefined();
      expect(find(demo, 'Deployment', server), `demo ${server}`).toBeDefined();
    }
    for (const o of prod.filter((x) => x.kind === 'Deployment')) {
      for (const c of o.spec.template.spec.containers) expect(c.image).not.toMatch(/:latest$|^[^:]+$/);
    }
  });

  it("runs only images the one Dockerfile builds (tollgate/<SERVICE>), on the port the service's stage sets", () => {
    const dockerfile = readFileSync(resolve(root, 'Dockerfile'), 'utf8');
    const stagePort = (svc: string) =>
      new RegExp(`^FROM base AS service-${svc}\\n(?:#.*\\n)*ENV PORT=(\\d+)`, 'm').exec(dockerfile)?.[1];
    let checked = 0;
    for (const [overlay, objs] of rendered) {
      for (const o of objs.filter((x) => x.kind === 'Deployment' || x.kind === 'Job')) {
        const pod = o.spec.template.spec;
        for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
          const match = /(?:^|\/)tollgate\/([a-z-]+):[^/]+$/.exec(c.image);
          if (!match) continue; // the demo's postgres, redis and rabbitmq
          const svc = match[1]!;
          const port = stagePort(svc);
          expect(
            port,
            `${overlay} ${o.metadata.name}: ${c.image} has a stage in the Dockerfile`,
          ).toBeDefined();
          const env = (c.env ?? []).find((e: Obj) => e.name === 'PORT')?.value;
          if (env !== undefined) expect(env, `${overlay} ${o.metadata.name} ${c.name} PORT`).toBe(port);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(2 * deployed.length);
  });

  it('ships catalogs identical to infra/catalog (base: example providers, demo: dev)', () => {
    expect(readFileSync(join(k8s, 'base/catalog.yaml'), 'utf8')).toBe(
      readFileSync(resolve(root, 'infra/catalog/example.providers.yaml'), 'utf8'),
    );
    expect(readFileSync(join(k8s, 'overlays/demo/catalog.yaml'), 'utf8')).toBe(
      readFileSync(resolve(root, 'infra/catalog/dev.yaml'), 'utf8'),
    );
  });
});
