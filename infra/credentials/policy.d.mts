// Types of policy.mjs (plain JavaScript so node runs it without a build step).
export declare const POSTGRES_SERVICES: readonly ['keys', 'billing', 'dashboard'];
export declare const REDIS_SERVICES: readonly ['proxy', 'keys', 'billing'];
export declare const RABBITMQ_SERVICES: readonly ['proxy', 'billing'];
export declare const REDIS_CLUSTER_COMMANDS: readonly string[];
export declare function redisAclRules(prefix: string): Record<'proxy' | 'keys' | 'billing', string[]>;
export declare function rabbitmqPermissions(
  prefix: string,
): Record<'proxy' | 'billing', { configure: string; write: string; read: string }>;
