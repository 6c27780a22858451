// The side effect the approval guards. A real pipeline would deploy here.

export async function deploy(args: Record<string, unknown>): Promise<string> {
  return `deploy ${String(args.service)} ${String(args.version)}`;
}
