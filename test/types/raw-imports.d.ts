/** A file's text, imported with Vite's `?raw` suffix (the workers pool runs tests through Vite). */
declare module "*?raw" {
  const text: string;
  export default text;
}
