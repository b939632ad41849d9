declare module 'snappyjs' {
  export function uncompress(input: Uint8Array, maxLength?: number): Uint8Array;
  export function compress(input: Uint8Array): Uint8Array;
  const snappy: { uncompress: typeof uncompress; compress: typeof compress };
  export default snappy;
}
