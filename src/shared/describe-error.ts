/**
 * A readable text for anything an executor, a hook or an observer may throw, that never throws
 * itself: `String(value)` throws for an object with no prototype, for one whose `toString` throws,
 * and for a symbol in a template; reading an `Error`'s `message` can throw too (a getter, a proxy).
 */
export function describeError(value: unknown): string {
  try {
    if (value instanceof Error) {
      const message: unknown = value.message;
      if (typeof message === "string" && message !== "") return message;
      const name: unknown = value.name;
      return typeof name === "string" && name !== "" ? name : "Error";
    }
  } catch {
    // a hostile Error (a throwing getter, a proxy): described as any other value below
  }
  if (typeof value === "string") return value === "" ? "(empty error message)" : value;
  if (typeof value !== "object" || value === null) {
    try {
      return String(value); // undefined, null, numbers, booleans, bigints, symbols, functions
    } catch {
      return `a thrown ${typeof value}`;
    }
  }
  for (const attempt of [() => String(value), () => JSON.stringify(value)]) {
    try {
      const text: unknown = attempt();
      if (typeof text === "string" && text !== "" && text !== "[object Object]" && text !== "{}") return text;
    } catch {
      // the next way
    }
  }
  return "a thrown object with nothing to print (not an Error)";
}
