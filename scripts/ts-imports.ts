/**
 * Lets Node run the repo's TypeScript sources as they are (type stripping), e.g. the Node tests' worker
 * process: `node --import ./scripts/ts-imports.ts test/node/fixtures/worker-process.ts …`. The sources import
 * each other as `./x.js` (what tsc and bundlers want); Node finds no such file beside a `.ts`, so a
 * relative `.js` specifier that does not resolve is tried again as `.ts`. A published build has no
 * need of this.
 */
import { registerHooks } from "node:module";

registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (error) {
      if (!/^\.\.?\//.test(specifier) || !specifier.endsWith(".js")) throw error;
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
  },
});
