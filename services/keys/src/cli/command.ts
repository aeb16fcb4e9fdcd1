import { parseArgs } from 'node:util';
import { createServiceSigner, type ServiceSigner } from '@tollgate/auth';
import {
  adminPrivateKeyEnv,
  commonEnv,
  loadConfig as loadEnv,
  refuseDevSecretInProduction,
} from '@tollgate/config';
import { AppError, isAppError } from '@tollgate/errors';
import { createLogger } from '@tollgate/logger';
import { z } from 'zod';
import { type KeysConfig, loadConfig } from '../config';
import { createKeysRuntime, type KeysRuntime } from '../runtime';
import { type ServiceUrls, serviceUrls } from './service-call';

/**
 * A tiny command framework for the admin CLI (the "dashboard"). A command group lives in its own
 * file (`accounts.commands.ts`, `keys.commands.ts`, …) and is registered with one line in main.ts.
 * Every command takes `--json` (prints `{"data": …}`) and otherwise prints a table or text.
 * Bad arguments exit with code 2, other failures with 1.
 */
export interface OptionSpec {
  type: 'string' | 'boolean';
  required?: boolean;
  description: string;
}

type OptionValues<O extends Record<string, OptionSpec>> = {
  [K in keyof O]: O[K]['type'] extends 'boolean'
    ? boolean
    : O[K]['required'] extends true
      ? string
      : string | undefined;
};

export interface CliContext {
  runtime: KeysRuntime;
  config: KeysConfig;
  /** Billing and dashboard addresses (BILLING_URL, DASHBOARD_URL; default: the `make dev` ones). */
  urls: ServiceUrls;
  /** The CLI's environment (the command line's, or a test's). */
  env: NodeJS.ProcessEnv;
  /**
   * The CLI's own identity for billing and dashboard calls (`admin`, from ADMIN_PRIVATE_KEY; the dev
   * key outside production). Read on first use: commands that only touch the keys database need none.
   */
  admin: () => ServiceSigner;
}

type Cell = string | number | boolean | null | undefined;

export interface CommandResult {
  /** Printed as `{"data": …}` with --json. */
  data: unknown;
  /** The readable form; without it, `text` or the JSON is printed. */
  table?: { columns: string[]; rows: Cell[][] };
  text?: string;
}

export interface Command {
  name: string;
  summary: string;
  options: Record<string, OptionSpec>;
  run(ctx: CliContext, options: Record<string, string | boolean | undefined>): Promise<CommandResult>;
}

export interface CommandGroup {
  name: string;
  summary: string;
  commands: Command[];
}

export function defineCommand<const O extends Record<string, OptionSpec>>(command: {
  name: string;
  summary: string;
  options: O;
  run(ctx: CliContext, options: OptionValues<O>): Promise<CommandResult>;
}): Command {
  return command as unknown as Command;
}

/** A bad command line: exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly help?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

const processIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
};

/** Runs one command line; returns the exit code. */
export async function runCli(
  argv: readonly string[],
  groups: readonly CommandGroup[],
  io: CliIo = processIo,
) {
  const json = argv.includes('--json');
  const [groupName, commandName, ...rest] = argv;
  try {
    if (!groupName || groupName === '--help' || groupName === '-h' || groupName === 'help') {
      io.stdout(topHelp(groups));
      return groupName ? 0 : 2;
    }
    const group = groups.find((g) => g.name === groupName);
    if (!group) throw new UsageError(`unknown command group "${groupName}"`, topHelp(groups));
    if (!commandName || commandName === '--help' || commandName === '-h') {
      io.stdout(groupHelp(group));
      return commandName ? 0 : 2;
    }
    const command = group.commands.find((c) => c.name === commandName);
    if (!command) throw new UsageError(`unknown command "${groupName} ${commandName}"`, groupHelp(group));
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout(commandHelp(group, command));
      return 0;
    }
    const options = parseOptions(group, command, rest);
    const result = await withContext(io.env, (ctx) => command.run(ctx, options));
    io.stdout(json ? `${JSON.stringify({ data: result.data })}\n` : render(result));
    return 0;
  } catch (err) {
    return reportError(err, json, io);
  }
}

function parseOptions(group: CommandGroup, command: Command, args: string[]) {
  let values: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        json: { type: 'boolean' },
        ...Object.fromEntries(Object.entries(command.options).map(([k, o]) => [k, { type: o.type }])),
      },
    });
    values = parsed.values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new UsageError(
      (err as Error).message.split('\n')[0] ?? 'invalid arguments',
      commandHelp(group, command),
    );
  }
  for (const [name, spec] of Object.entries(command.options)) {
    const v = values[name];
    if (spec.required && (v === undefined || v === '')) {
      throw new UsageError(`missing required option --${name}`, commandHelp(group, command));
    }
    if (spec.type === 'boolean' && v === undefined) values[name] = false;
  }
  return values;
}

const adminEnv = z.object({ ...commonEnv, ...adminPrivateKeyEnv }).superRefine(refuseDevSecretInProduction);

async function withContext<T>(env: NodeJS.ProcessEnv, fn: (ctx: CliContext) => Promise<T>): Promise<T> {
  const config = loadConfig(env);
  // Logs go nowhere: stdout carries the command's output (`--json` must stay parseable).
  const logger = createLogger({ name: 'tollgate-cli', level: 'silent' });
  const runtime = await createKeysRuntime(config, { logger });
  try {
    let admin: ServiceSigner | undefined;
    const adminSigner = () => {
      admin ??= createServiceSigner('admin', loadEnv(adminEnv, env).ADMIN_PRIVATE_KEY);
      return admin;
    };
    return await fn({ runtime, config, urls: serviceUrls(env), env, admin: adminSigner });
  } finally {
    await runtime.close();
  }
}

function reportError(err: unknown, json: boolean, io: CliIo): number {
  if (err instanceof UsageError) {
    if (json) io.stdout(`${JSON.stringify(new AppError('bad_request', err.message).toEnvelope())}\n`);
    io.stderr(`error: ${err.message}\n${err.help ? `\n${err.help}` : ''}`);
    return 2;
  }
  const appError = isAppError(err) ? err : null;
  const message = appError ? appError.message : `${(err as Error)?.message ?? String(err)}`;
  if (json) {
    const envelope = (appError ?? new AppError('internal', message)).toEnvelope();
    io.stdout(`${JSON.stringify(envelope)}\n`);
  }
  io.stderr(`error: ${message}\n`);
  return appError && (appError.type === 'bad_request' || appError.type === 'not_found') ? 2 : 1;
}

function render(result: CommandResult): string {
  if (result.table) return renderTable(result.table.columns, result.table.rows);
  if (result.text !== undefined) return `${result.text}\n`;
  return `${JSON.stringify(result.data, null, 2)}\n`;
}

function renderTable(columns: string[], rows: Cell[][]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = [
    columns,
    ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c)))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return `${cells
    .map((r) =>
      r
        .map((c, i) => (c ?? '').padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

const usageLine = (group: CommandGroup, c: Command) =>
  `tollgate ${group.name} ${c.name} ${Object.entries(c.options)
    .map(([k, o]) => {
      const flag = o.type === 'boolean' ? `--${k}` : `--${k} <${k}>`;
      return o.required ? flag : `[${flag}]`;
    })
    .join(' ')} [--json]`.replace(/\s+/g, ' ');

function topHelp(groups: readonly CommandGroup[]): string {
  return `Usage: tollgate <group> <command> [options] [--json]\n\n${groups
    .map(
      (g) =>
        `  ${g.name.padEnd(10)} ${g.summary}\n${g.commands.map((c) => `    ${usageLine(g, c)}\n`).join('')}`,
    )
    .join('\n')}`;
}

function groupHelp(group: CommandGroup): string {
  return `${group.summary}\n\n${group.commands.map((c) => `  ${usageLine(group, c)}\n      ${c.summary}\n`).join('')}`;
}

function commandHelp(group: CommandGroup, c: Command): string {
  return `Usage: ${usageLine(group, c)}\n${c.summary}\n\n${Object.entries(c.options)
    .map(([k, o]) => `  --${k.padEnd(12)} ${o.description}${o.required ? ' (required)' : ''}\n`)
    .join('')}  --json         print {"data": …} instead of a table\n`;
}
