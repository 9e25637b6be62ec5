// S3 credentials from the standard AWS chain, for when S3_ACCESS_KEY / S3_SECRET_KEY are not set
// (S3 on AWS with an IAM role): the static AWS_* variables, then web identity (Kubernetes IRSA or
// EKS Pod Identity's token file: AssumeRoleWithWebIdentity at STS), then the container or instance
// metadata endpoints. The order is the AWS SDKs' default chain.
//
// minio-js 8 ships IamAwsProvider, which covers web identity too, but its STS endpoint is fixed
// (`https://sts.<AWS_REGION>.amazonaws.com`, node_modules/minio/dist/esm/IamAwsProvider.mjs) and it
// refreshes only 10 s before expiry: web identity is done here instead, honouring the SDKs'
// AWS_ENDPOINT_URL_STS and refreshing 5 minutes ahead. The metadata endpoints are left to
// IamAwsProvider (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI, else the instance metadata
// service at AWS_EC2_METADATA_SERVICE_ENDPOINT or 169.254.169.254), which reads those from the
// process environment itself.
import { readFile } from 'node:fs/promises';
import { IamAwsProvider, type ClientOptions } from 'minio';

export type CredentialProvider = NonNullable<ClientOptions['credentialsProvider']>;
type Credentials = Awaited<ReturnType<CredentialProvider['getCredentials']>>;
type Keys = { accessKey: string; secretKey: string; sessionToken?: string | undefined };
// The package's main entry exports IamAwsProvider but not its base class, which holds fixed keys
// and is what a minio Client asks for them (getCredentials before each request or presign).
const StaticProvider = Object.getPrototypeOf(IamAwsProvider) as new (keys: Keys) => CredentialProvider;

export interface AwsChainEnv {
  AWS_REGION?: string | undefined;
  AWS_ACCESS_KEY_ID?: string | undefined;
  AWS_SECRET_ACCESS_KEY?: string | undefined;
  AWS_SESSION_TOKEN?: string | undefined;
  AWS_WEB_IDENTITY_TOKEN_FILE?: string | undefined;
  AWS_ROLE_ARN?: string | undefined;
  AWS_ROLE_SESSION_NAME?: string | undefined;
  AWS_ENDPOINT_URL_STS?: string | undefined;
  AWS_EC2_METADATA_SERVICE_ENDPOINT?: string | undefined;
}

/** Which link of the chain a process uses, for its start-up log (never a credential). */
type AwsCredentialSource = 'environment' | 'web-identity' | 'metadata';

export function awsCredentialSource(env: AwsChainEnv): AwsCredentialSource {
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) return 'environment';
  if (env.AWS_WEB_IDENTITY_TOKEN_FILE && env.AWS_ROLE_ARN) return 'web-identity';
  return 'metadata';
}

/**
 * The chain's provider for a minio Client (`credentialsProvider`); `region` signs nothing here, it
 * picks the regional STS. `presignSeconds`: the lifetime of the URLs presigned with these
 * credentials. A presigned URL stops working when the credentials that signed it expire, so web
 * identity credentials are renewed while they still outlive such a URL (up to half a session).
 */
export function awsCredentialProvider(env: AwsChainEnv, region: string, presignSeconds = 0): CredentialProvider {
  switch (awsCredentialSource(env)) {
    case 'environment':
      return new StaticProvider({ accessKey: env.AWS_ACCESS_KEY_ID!, secretKey: env.AWS_SECRET_ACCESS_KEY!, sessionToken: env.AWS_SESSION_TOKEN });
    case 'web-identity':
      return new WebIdentityProvider({
        tokenFile: env.AWS_WEB_IDENTITY_TOKEN_FILE!,
        roleArn: env.AWS_ROLE_ARN!,
        sessionName: env.AWS_ROLE_SESSION_NAME,
        stsEndpoint: env.AWS_ENDPOINT_URL_STS ?? `https://sts.${env.AWS_REGION ?? region}.amazonaws.com`,
        refreshMarginMs: Math.min(Math.max(DEFAULT_MARGIN_MS, (presignSeconds + 60) * 1000), (SESSION_SECONDS * 1000) / 2),
      });
    case 'metadata':
      return new IamAwsProvider({ customEndpoint: env.AWS_EC2_METADATA_SERVICE_ENDPOINT });
  }
}

/** AWS SDKs renew temporary credentials this long before they expire. */
const DEFAULT_MARGIN_MS = 5 * 60_000;
/** The session asked of STS: one hour, within every role's maximum session duration. */
const SESSION_SECONDS = 3600;

interface WebIdentityOptions {
  tokenFile: string;
  roleArn: string;
  sessionName?: string | undefined;
  /** STS's base URL (`https://sts.<region>.amazonaws.com`, or AWS_ENDPOINT_URL_STS). */
  stsEndpoint: string;
  /** Credentials are renewed this long before they expire (default 5 minutes, as the AWS SDKs). */
  refreshMarginMs?: number;
  durationSeconds?: number;
}

/**
 * AssumeRoleWithWebIdentity (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html):
 * an unsigned call carrying the token file's JWT (re-read on every call: the kubelet rotates it),
 * answered with temporary credentials and their expiry. One call at a time: concurrent requests
 * near expiry wait for the same renewal.
 */
class WebIdentityProvider extends StaticProvider {
  private current: { credentials: Credentials; expiresAt: number } | undefined;
  private pending: Promise<Credentials> | undefined;
  /** How many times STS was asked (observability and tests). */
  renewals = 0;

  constructor(private readonly options: WebIdentityOptions) {
    super({ accessKey: '', secretKey: '' });
  }

  override async getCredentials(): Promise<Credentials> {
    const margin = this.options.refreshMarginMs ?? DEFAULT_MARGIN_MS;
    if (this.current && Date.now() < this.current.expiresAt - margin) return this.current.credentials;
    this.pending ??= this.assumeRole().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async assumeRole(): Promise<Credentials> {
    const token = (await readFile(this.options.tokenFile, 'utf8')).trim();
    const body = new URLSearchParams({
      Action: 'AssumeRoleWithWebIdentity',
      Version: '2011-06-15',
      RoleArn: this.options.roleArn,
      RoleSessionName: this.options.sessionName ?? `mediagen-${process.pid}-${Date.now()}`,
      WebIdentityToken: token,
      DurationSeconds: String(this.options.durationSeconds ?? SESSION_SECONDS),
    });
    this.renewals += 1;
    const res = await fetch(new URL('/', this.options.stsEndpoint), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8', accept: 'application/xml' },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const xml = await res.text();
    if (!res.ok) {
      // STS's error code (e.g. InvalidIdentityToken, AccessDenied) names the cause; the body may echo the request, so only the code is kept.
      throw new Error(`STS AssumeRoleWithWebIdentity failed: HTTP ${res.status} ${xmlField(xml, 'Code') ?? ''}`.trim());
    }
    const accessKey = xmlField(xml, 'AccessKeyId');
    const secretKey = xmlField(xml, 'SecretAccessKey');
    const sessionToken = xmlField(xml, 'SessionToken');
    const expiration = Date.parse(xmlField(xml, 'Expiration') ?? '');
    if (!accessKey || !secretKey || !sessionToken || Number.isNaN(expiration)) {
      throw new Error('STS AssumeRoleWithWebIdentity answered without complete credentials');
    }
    const credentials = await new StaticProvider({ accessKey, secretKey, sessionToken }).getCredentials();
    this.current = { credentials, expiresAt: expiration };
    return credentials;
  }
}

/** The text of the first <name> element (STS's answers are flat and unambiguous for these names). */
function xmlField(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return m ? decodeXml(m[1]!.trim()) : undefined;
}

function decodeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[e]!);
}
