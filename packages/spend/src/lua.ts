import { loadLua as loadLuaIn, luaDir } from '@tollgate/redis';

/** The source of `packages/spend/lua/<name>.lua` as sent to Redis (the one loader: @tollgate/redis). */
export function loadLua(name: string, dir = luaDir(import.meta.url)): string {
  return loadLuaIn(name, dir);
}
