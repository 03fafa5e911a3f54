/** What the lane calls on its `PAYLOADS` binding: R2's own API, narrowed (any R2 bucket binding is one). */
export interface PayloadBucket {
  put(key: string, value: string, options?: { httpMetadata?: { contentType?: string } }): Promise<unknown>;
  get(key: string): Promise<{ text(): Promise<string>; body: ReadableStream } | null>;
  delete(keys: string | string[]): Promise<void>;
}
