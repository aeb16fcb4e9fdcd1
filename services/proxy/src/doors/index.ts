/**
 * The front doors the proxy serves (door.ts): one per public API, each mounted at
 * `POST /api/v1<path>` and `POST /v1<path>` by http/doors.ts. A new door is a folder and an entry here.
 */
import { chatDoor } from './chat/door';
import type { FrontDoor } from './door';

export const FRONT_DOORS: readonly FrontDoor[] = [chatDoor];
