// The upload's bytes as Buffers with progress reported, and a push-back reader so that detection
// can look at the first bytes without consuming them.

export async function* readSource(
  source: AsyncIterable<Uint8Array>,
  onProgress?: (bytesRead: number) => void,
): AsyncGenerator<Buffer, void, undefined> {
  let bytesRead = 0;
  for await (const chunk of source) {
    bytesRead += chunk.byteLength;
    onProgress?.(bytesRead);
    if (chunk.byteLength > 0) {
      yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    }
  }
}

export class PushbackReader {
  private readonly iterator: AsyncIterator<Buffer>;
  private readonly pushedBack: Buffer[] = [];

  constructor(chunks: AsyncIterable<Buffer>) {
    this.iterator = chunks[Symbol.asyncIterator]();
  }

  /** The next chunk, or undefined at the end of the input. */
  async next(): Promise<Buffer | undefined> {
    const back = this.pushedBack.pop();
    if (back !== undefined) return back;
    const result = await this.iterator.next();
    return result.done ? undefined : result.value;
  }

  /** Makes `chunk` the next one read. */
  pushBack(chunk: Buffer): void {
    if (chunk.length > 0) this.pushedBack.push(chunk);
  }

  /** The first `size` bytes (fewer at the end of the input), left unread. */
  async peek(size: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    let length = 0;
    while (length < size) {
      const chunk = await this.next();
      if (chunk === undefined) break;
      parts.push(chunk);
      length += chunk.length;
    }
    const head = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    this.pushBack(head);
    return head;
  }

  /** Everything not read yet; stopping early closes the underlying source. */
  async *rest(): AsyncGenerator<Buffer, void, undefined> {
    try {
      for (let chunk = await this.next(); chunk !== undefined; chunk = await this.next()) yield chunk;
    } finally {
      await this.close();
    }
  }

  async close(): Promise<void> {
    await this.iterator.return?.();
  }
}
