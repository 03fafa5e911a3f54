/**
 * The API token lives in `sessionStorage` only: gone when the tab closes, never in localStorage, a
 * cookie or a URL.
 */
const KEY = "switchyard.apiToken";

export function loadToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
