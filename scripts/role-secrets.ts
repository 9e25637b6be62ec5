// The role-scoped secrets a process reads (shared/routing.ts secretsOfRoles), one name a line, for
// scripts that assemble a process's environment (scripts/stack-prod.sh):
//   node dist/scripts/role-secrets.js gateway                  (none)
//   node dist/scripts/role-secrets.js webhooks                 WEBHOOK_SECRETS_KEY
//   node dist/scripts/role-secrets.js provider:fal             FAL_KEY
//   node dist/scripts/role-secrets.js --all                    every role-scoped secret
import { roleScopedSecrets, secretsOfRoles } from '../shared/routing.js';

const [arg] = process.argv.slice(2);
if (!arg) {
  process.stderr.write('usage: role-secrets.js <gateway | admin | worker roles, comma-separated | --all>\n');
  process.exit(2);
}
const names =
  arg === '--all'
    ? [...roleScopedSecrets]
    : secretsOfRoles(
        arg
          .split(',')
          .map((r) => r.trim())
          .filter(Boolean),
      );
process.stdout.write(names.map((n) => `${n}\n`).join(''));
