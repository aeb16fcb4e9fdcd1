import { pathToFileURL } from 'node:url';
import { accountsCommands } from './accounts.commands';
import { type CommandGroup, runCli } from './command';
import { creditsCommands, dlqCommands, setPostpaidCommand } from './credits.commands';
import { demoCommands } from './demo.commands';
import { keysCommands } from './keys.commands';
import { teamsCommands } from './teams.commands';
import { usersCommands } from './users.commands';

/**
 * The admin CLI (`pnpm tollgate <group> <command> … [--json]`): the dashboard functions.
 * Each group lives in its own file; register a new one with one line here.
 */
export const commandGroups: CommandGroup[] = [
  { ...accountsCommands, commands: [...accountsCommands.commands, setPostpaidCommand] },
  keysCommands,
  teamsCommands,
  creditsCommands,
  usersCommands,
  dlqCommands,
  demoCommands,
];

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runCli(process.argv.slice(2), commandGroups);
}
