/**
 * One forward-only schema migration (of a lane: ../migrations.ts; of the registry:
 * registry-migrations.ts). Its own file, so that the lists of migrations and their runner import
 * each other in one direction only.
 */
export interface Migration {
  version: number;
  name: string;
  statements: string[];
}
