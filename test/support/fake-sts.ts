// A fake AWS STS on loopback that answers AssumeRoleWithWebIdentity as documented
// (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html: a
// form-encoded POST, or the same parameters in the query string; the XML answer below, or an
// ErrorResponse with HTTP 400). The credentials it hands out are real: temporary credentials of the
// test stack's MinIO, from MinIO's own STS (AssumeRole signed with the stack's keys), so S3 requests
// made with them succeed only if the session token travels with them. The Expiration it reports is
// its own (`lifetimeMs`), so a test can make a client renew early.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AssumeRoleProvider } from 'minio/dist/esm/AssumeRoleProvider.mjs';

export interface StsCall {
  token: string;
  roleArn: string;
  sessionName: string;
}

export interface FakeSts {
  url: string;
  calls: StsCall[];
  /** The Expiration reported on the next answers, from now. */
  lifetimeMs: number;
  close(): Promise<void>;
}

export async function startFakeSts(opts: {
  acceptedTokens: string[];
  roleArn: string;
  minio: { endpoint: string; accessKey: string; secretKey: string; region: string };
  lifetimeMs: number;
}): Promise<FakeSts> {
  const calls: StsCall[] = [];
  const state = { lifetimeMs: opts.lifetimeMs };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const query = new URL(req.url ?? '/', 'http://sts').searchParams;
        const form = new URLSearchParams(req.method === 'POST' ? Buffer.concat(chunks).toString('utf8') : '');
        const param = (name: string) => form.get(name) ?? query.get(name) ?? '';
        const fail = (status: number, code: string, message: string) => {
          res.writeHead(status, { 'content-type': 'text/xml' });
          res.end(
            `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>fake</RequestId></ErrorResponse>`,
          );
        };
        if (param('Action') !== 'AssumeRoleWithWebIdentity' || param('Version') !== '2011-06-15') return fail(400, 'InvalidAction', 'unsupported action');
        const call = { token: param('WebIdentityToken'), roleArn: param('RoleArn'), sessionName: param('RoleSessionName') };
        calls.push(call);
        if (!opts.acceptedTokens.includes(call.token)) return fail(400, 'InvalidIdentityToken', 'the token is not valid');
        if (call.roleArn !== opts.roleArn || !call.sessionName) return fail(403, 'AccessDenied', 'not authorized to assume the role');
        try {
          const minioSts = new AssumeRoleProvider({
            stsEndpoint: opts.minio.endpoint,
            accessKey: opts.minio.accessKey,
            secretKey: opts.minio.secretKey,
            region: opts.minio.region,
            durationSeconds: 900,
          });
          const c = await minioSts.getCredentials();
          const expiration = new Date(Date.now() + state.lifetimeMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
          res.writeHead(200, { 'content-type': 'text/xml' });
          res.end(`<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:media:worker</SubjectFromWebIdentityToken>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <Arn>${call.roleArn.replace(':role/', ':assumed-role/').replace('arn:aws:iam:', 'arn:aws:sts:')}/${call.sessionName}</Arn>
      <AssumedRoleId>AROAFAKE:${call.sessionName}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <SessionToken>${c.getSessionToken() ?? ''}</SessionToken>
      <SecretAccessKey>${c.getSecretKey()}</SecretAccessKey>
      <Expiration>${expiration}</Expiration>
      <AccessKeyId>${c.getAccessKey()}</AccessKeyId>
    </Credentials>
    <Provider>oidc.eks.example</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>fake-${calls.length}</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`);
        } catch {
          fail(500, 'InternalFailure', 'the backing MinIO STS did not answer');
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    get lifetimeMs() {
      return state.lifetimeMs;
    },
    set lifetimeMs(v: number) {
      state.lifetimeMs = v;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
