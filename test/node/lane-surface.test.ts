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

function laneMethods(): ts.MethodDeclaration[] {
  const source = parse(LANE);
  const lane = source.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === "Lane");
  if (!lane) throw new Error(`no class Lane in ${LANE}`);
  return lane.members.filter((m): m is ts.MethodDeclaration => {
    if (!ts.isMethodDeclaration(m) || !ts.isIdentifier(m.name)) return false;
    const modifiers = ts.getModifiers(m) ?? [];
    return !modifiers.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword || x.kind === ts.SyntaxKind.StaticKeyword);
  });
}

/** The gate call a method returns (`this.gate.read(…)` or `this.gate.change(…)`), if that is what it returns. */
function gateCall(method: ts.MethodDeclaration): ts.CallExpression | null {
  const statements = method.body?.statements ?? [];
  const last = statements.at(-1);
  if (statements.length !== 1 || !last || !ts.isReturnStatement(last) || !last.expression || !ts.isCallExpression(last.expression)) return null;
  const callee = last.expression.expression.getText();
  return callee === "this.gate.read" || callee === "this.gate.change" ? last.expression : null;
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
    const outside = methods.filter((m) => !OUTSIDE_THE_GATE.has(m.name.getText()) && gateCall(m) === null).map((m) => m.name.getText());
    expect(outside).toEqual([]);
  });

  it("lets only a change declared flush.inBody ask for the flush in its body", () => {
    const flushing = bodiesThatFlush();
    expect(flushing.size).toBeGreaterThan(0);
    const undeclared: string[] = [];
    for (const method of laneMethods()) {
      const call = gateCall(method);
      if (!call) continue;
      // The body the method delegates to: `() => this.<field>.<name>(…)`.
      const body = call.arguments[0];
      const delegated = body && ts.isArrowFunction(body) && ts.isCallExpression(body.body) && ts.isPropertyAccessExpression(body.body.expression) ? body.body.expression.name.text : null;
      if (delegated === null || !flushing.has(delegated)) continue;
      if (call.expression.getText() !== "this.gate.change" || call.arguments[1]?.getText() !== "flush.inBody") undeclared.push(method.name.getText());
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
