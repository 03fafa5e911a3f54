/**
 * The lane's RPC surface keeps "flush after a change" structural: every RPC method of the `Lane`
 * class passes the one gate (src/durable/rpc/gate.ts) as a `read` or a `change`, but for the enqueue
 * path, which answers in its own turn and is named here; an RPC body that asks the wake for a flush
 * itself is one whose method declares `flush.inBody`; and the bodies (src/durable/rpc/) are typed
 * against the parts they need, never against the lane's core. The sources are parsed with the
 * TypeScript compiler.
 */
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const LANE = "src/durable/lane.ts";
const RPC = "src/durable/rpc";

/** Methods that answer in their own turn when they can (the enqueue path flushes in its write), or read only the platform's alarm. */
const OUTSIDE_THE_GATE = new Set(["enqueue", "enqueueText", "enqueueGroup", "storedAlarm"]);
/** The Durable Object's own handlers: not RPC methods. */
const HANDLERS = new Set(["alarm", "fetch", "webSocketMessage", "webSocketClose", "webSocketError"]);
/** The lane's core: what the RPC bodies must never name. */
const CORE = ["../lane.js", "../lane-parts.js", "../lane-lifecycle.js"];

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(resolve(ROOT, path), "utf8"), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

function laneClass(source: ts.SourceFile): ts.ClassDeclaration {
  const lane = source.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === "Lane");
  if (!lane) throw new Error(`no class Lane in ${source.fileName}`);
  return lane;
}

const isHidden = (m: ts.MethodDeclaration) => (ts.getModifiers(m) ?? []).some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword || x.kind === ts.SyntaxKind.StaticKeyword);
const methodsOf = (lane: ts.ClassDeclaration) => lane.members.filter((m): m is ts.MethodDeclaration => ts.isMethodDeclaration(m) && ts.isIdentifier(m.name));

function laneMethods(source: ts.SourceFile = parse(LANE)): ts.MethodDeclaration[] {
  return methodsOf(laneClass(source)).filter((m) => !isHidden(m));
}

/** Wrappers of an answer the gate gave, awaited: `this.whole(await this.gate.…(…))` reads a job's held payload and result back from R2 (payloads/whole-answers.ts). */
const ANSWER_WRAPPERS = new Set(["this.whole"]);

/** A gate call a method makes: a read or a change, the body it runs, and the flush rule it names (undefined: the gate's default). */
interface GateCall {
  callee: "this.gate.read" | "this.gate.change";
  body: ts.Expression | undefined;
  rule: string | undefined;
}

/**
 * The lane's private methods that hand the body they are given to the gate as a change, and nothing
 * else: `private name(body) { return this.gate.changeThen(body, …, rule?); }` (a change answered once
 * a delivery it owes is made: `withdrawn`). Each with the rule it names.
 */
function changeHelpers(source: ts.SourceFile): Map<string, string | undefined> {
  const helpers = new Map<string, string | undefined>();
  for (const m of methodsOf(laneClass(source))) {
    const param = m.parameters.length === 1 ? m.parameters[0]!.name : null;
    const statements = m.body?.statements ?? [];
    const only = statements.length === 1 ? statements[0]! : null;
    if (!isHidden(m) || !param || !ts.isIdentifier(param) || !only || !ts.isReturnStatement(only) || !only.expression || !ts.isCallExpression(only.expression)) continue;
    const call = only.expression;
    const callee = call.expression.getText();
    const first = call.arguments[0];
    if (!first || !ts.isIdentifier(first) || first.text !== param.text) continue;
    if (callee === "this.gate.change") helpers.set(m.name.getText(), call.arguments[1]?.getText());
    else if (callee === "this.gate.changeThen") helpers.set(m.name.getText(), call.arguments[2]?.getText());
  }
  return helpers;
}

/**
 * The gate call a method returns (`this.gate.read(…)`, `this.gate.change(…)` or `this.gate.changeThen(…)`,
 * a change through one of `helpers`, or one of them wrapped in `this.whole(await …)`), if that is what it returns.
 */
function gateCall(method: ts.MethodDeclaration, helpers: ReadonlyMap<string, string | undefined>): GateCall | null {
  const statements = method.body?.statements ?? [];
  const last = statements.at(-1);
  if (statements.length !== 1 || !last || !ts.isReturnStatement(last) || !last.expression || !ts.isCallExpression(last.expression)) return null;
  let call = last.expression;
  const inner = call.arguments[0];
  if (ANSWER_WRAPPERS.has(call.expression.getText()) && call.arguments.length === 1 && inner && ts.isAwaitExpression(inner) && ts.isCallExpression(inner.expression)) call = inner.expression;
  const callee = call.expression.getText();
  if (callee === "this.gate.read" || callee === "this.gate.change") return { callee, body: call.arguments[0], rule: call.arguments[1]?.getText() };
  // A change answered once a delivery it owes is made, written in place: `this.gate.changeThen(body, then, rule?)`.
  if (callee === "this.gate.changeThen") return { callee: "this.gate.change", body: call.arguments[0], rule: call.arguments[2]?.getText() };
  const helper = callee.startsWith("this.") ? callee.slice("this.".length) : null;
  if (helper !== null && helpers.has(helper) && call.arguments.length === 1) return { callee: "this.gate.change", body: call.arguments[0], rule: helpers.get(helper) };
  return null;
}

/** The methods of `source`'s Lane that pass no gate (but the enqueue path's and the handlers). */
function outsideTheGate(source: ts.SourceFile): string[] {
  const helpers = changeHelpers(source);
  return laneMethods(source)
    .filter((m) => !HANDLERS.has(m.name.getText()) && !OUTSIDE_THE_GATE.has(m.name.getText()) && gateCall(m, helpers) === null)
    .map((m) => m.name.getText());
}

/** The RPC bodies' methods that call `afterChange` themselves, as `<Lane field>.<method>` is not known here: by method name. */
function bodiesThatFlush(): Set<string> {
  const names = new Set<string>();
  for (const file of readdirSync(resolve(ROOT, RPC))) {
    if (file === "gate.ts") continue;
    const visit = (node: ts.Node, method: string | null): void => {
      const inside = ts.isMethodDeclaration(node) && ts.isIdentifier(node.name) ? node.name.text : method;
      if (inside && ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === "afterChange") names.add(inside);
      ts.forEachChild(node, (child) => visit(child, inside));
    };
    visit(parse(`${RPC}/${file}`), null);
  }
  return names;
}

describe("the lane's RPC surface", () => {
  it("passes every RPC method through the gate, as a read or a change, but the enqueue path's", () => {
    const methods = laneMethods().filter((m) => !HANDLERS.has(m.name.getText()));
    expect(methods.length).toBeGreaterThan(40);
    expect(outsideTheGate(parse(LANE))).toEqual([]);
    // The wrappers the lane uses are recognised where it uses them.
    const helpers = changeHelpers(parse(LANE));
    expect([...helpers.keys()]).toContain("withdrawn");
    const named = (name: string) => gateCall(laneMethods().find((m) => m.name.getText() === name)!, helpers);
    for (const name of ["cancel", "failLane", "purgeQueue", "requeue", "complete", "fail", "snooze", "release", "progress", "completeWaitpoint"]) expect(named(name)?.callee, name).toBe("this.gate.change");
    for (const name of ["getJob", "awaitJob"]) expect(named(name)?.callee, name).toBe("this.gate.read");
  });

  it("flags a method that skips the gate, however it is wrapped", () => {
    const source = ts.createSourceFile(
      "lane.ts",
      `class Lane {
        async through(id) { return this.whole(await this.gate.change(() => this.operator.requeue(id))); }
        async held(id) { return this.withdrawn(() => this.operator.cancel(id)); }
        async bare(id) { return this.whole(await this.operator.getJob(id)); }
        async helped(id) { return this.sideways(() => this.operator.cancel(id)); }
        private withdrawn(body) { return this.gate.changeThen(body, () => this.outbox.withdrawNow()); }
        private sideways(body) { return this.whole(body()); }
      }`,
      ts.ScriptTarget.Latest,
      true,
      ts.ScriptKind.TS,
    );
    expect(outsideTheGate(source)).toEqual(["bare", "helped"]);
  });

  it("lets only a change declared flush.inBody ask for the flush in its body", () => {
    const flushing = bodiesThatFlush();
    expect(flushing.size).toBeGreaterThan(0);
    const undeclared: string[] = [];
    const helpers = changeHelpers(parse(LANE));
    for (const method of laneMethods()) {
      const call = gateCall(method, helpers);
      if (!call) continue;
      // The body the method delegates to: `() => this.<field>.<name>(…)`.
      const { body } = call;
      const delegated = body && ts.isArrowFunction(body) && ts.isCallExpression(body.body) && ts.isPropertyAccessExpression(body.body.expression) ? body.body.expression.name.text : null;
      if (delegated === null || !flushing.has(delegated)) continue;
      if (call.callee !== "this.gate.change" || call.rule !== "flush.inBody") undeclared.push(method.name.getText());
    }
    expect(undeclared).toEqual([]);
  });

  it("types the RPC bodies against the parts they need, never the lane's core", () => {
    const named: string[] = [];
    for (const file of readdirSync(resolve(ROOT, RPC))) {
      for (const statement of parse(`${RPC}/${file}`).statements) {
        if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier) && CORE.includes(statement.moduleSpecifier.text)) named.push(`${file} → ${statement.moduleSpecifier.text}`);
      }
    }
    expect(named).toEqual([]);
  });
});
