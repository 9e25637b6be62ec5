// Scoped API keys, self-serve (docs/api/api-keys.md). Each key may carry rules: `scopes` (what
// kinds of endpoints it may call: read, generate, uploads, admin), `allowed_models` /
// `allowed_kinds` (what its creates may ask for), `allowed_ips` (the addresses it may be presented
// from) and `expires_at`. NULL in a rule column means "no such rule": a key from before keeps the
// full access of its member role.
//
// An owner's key with the admin scope mints and revokes keys through the gateway (POST/DELETE
// /v1/api-keys). The app role still only reads `api_keys` and `budgets` (db/roles.ts): it mints and
// revokes through these two SECURITY DEFINER functions, which take the acting key's id AND its
// secret and check, in the database, that the acting key is live, unexpired, an owner's, has the
// admin scope, and that the new key has no more than it has. The gateway stores only the hashes of
// secrets, so credentials taken from a gateway still cannot mint a key or revoke one without a live
// owner's admin key in hand. search_path is fixed and EXECUTE is revoked from PUBLIC (as
// 0030_audit_retention); grantAppRole grants them to the app role. Each notifies the gateways in
// its own transaction, as the admin CLI's createApiKey / revokeApiKey do.
import { sql, type Kysely } from 'kysely';

const API_KEY_SCOPES_SQL = sql`array['read', 'generate', 'uploads', 'admin']::text[]`;

/** The acting key, checked: its row when it may manage keys, else an exception (insufficient_privilege). */
const actingKey = sql`
      select k.* into parent from public.api_keys k
        join public.workspace_members m on m.workspace_id = k.workspace_id and m.email = k.created_by and m.role = 'owner'
       where k.id = p_actor_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
         and k.secret_hash = 'sha256:' || encode(sha256(convert_to(p_actor_secret, 'UTF8')), 'hex')
         and (k.scopes is null or 'admin' = any(k.scopes));
      if not found then
        raise exception 'the acting key may not manage API keys' using errcode = 'insufficient_privilege';
      end if;`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table api_keys
      add column scopes text[],
      add column allowed_models text[],
      add column allowed_kinds text[],
      add column allowed_ips cidr[],
      add column expires_at timestamptz,
      add constraint api_keys_scopes_known check (scopes <@ ${API_KEY_SCOPES_SQL} and cardinality(scopes) > 0),
      add constraint api_keys_rules_bounded check (
        coalesce(cardinality(allowed_models), 0) <= 100 and coalesce(cardinality(allowed_kinds), 0) <= 10
        and coalesce(cardinality(allowed_ips), 0) <= 50)`.execute(db);

  await sql`
    create function mint_api_key(
      p_actor_id text, p_actor_secret text, p_id text, p_secret_hash text, p_name text, p_scopes text[],
      p_models text[], p_kinds text[], p_ips cidr[], p_expires_at timestamptz,
      p_budget_id text, p_budget_limit integer, p_budget_period text, p_budget_alert_at integer[])
    returns table (workspace_id text, created_by text)
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
    as $$
    #variable_conflict use_column
    declare
      parent public.api_keys%rowtype;
    begin
      ${actingKey}
      if p_scopes is null or not (p_scopes <@ coalesce(parent.scopes, ${API_KEY_SCOPES_SQL}))
         or (parent.allowed_models is not null and (p_models is null or not p_models <@ parent.allowed_models))
         or (parent.allowed_kinds is not null and (p_kinds is null or not p_kinds <@ parent.allowed_kinds))
         or (parent.allowed_ips is not null and (p_ips is null or exists (
               select 1 from unnest(p_ips) c where not exists (select 1 from unnest(parent.allowed_ips) p where c <<= p))))
         or (parent.expires_at is not null and (p_expires_at is null or p_expires_at > parent.expires_at)) then
        raise exception 'a key may not mint a key with more than it has' using errcode = 'insufficient_privilege';
      end if;
      insert into public.api_keys (id, workspace_id, name, secret_hash, created_by, scopes, allowed_models, allowed_kinds, allowed_ips, expires_at)
        values (p_id, parent.workspace_id, p_name, p_secret_hash, parent.created_by, p_scopes, p_models, p_kinds, p_ips, p_expires_at);
      if p_budget_limit is not null then
        insert into public.budgets (id, workspace_id, scope, scope_id, period, limit_credits, alert_at)
          values (p_budget_id, parent.workspace_id, 'key', p_id, p_budget_period, p_budget_limit, coalesce(p_budget_alert_at, '{80,100}'));
      end if;
      perform pg_notify('api_key_created', p_id);
      return query select parent.workspace_id, parent.created_by;
    end $$`.execute(db);
  await sql`revoke all on function mint_api_key(text, text, text, text, text, text[], text[], text[], cidr[], timestamptz, text, integer, text, integer[]) from public`.execute(
    db,
  );

  await sql`
    create function revoke_api_key_with_key(p_actor_id text, p_actor_secret text, p_id text)
    returns table (id text, name text, revoked_at timestamptz, revoked boolean)
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
    as $$
    #variable_conflict use_column
    declare
      parent public.api_keys%rowtype;
      v_name text;
      v_at timestamptz;
    begin
      ${actingKey}
      update public.api_keys k set revoked_at = now()
        where k.id = p_id and k.workspace_id = parent.workspace_id and k.revoked_at is null
        returning k.name, k.revoked_at into v_name, v_at;
      if found then
        perform pg_notify('api_key_revoked', p_id);
        return query select p_id, v_name, v_at, true;
        return;
      end if;
      return query select k.id, k.name, k.revoked_at, false from public.api_keys k where k.id = p_id and k.workspace_id = parent.workspace_id;
    end $$`.execute(db);
  await sql`revoke all on function revoke_api_key_with_key(text, text, text) from public`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function if exists revoke_api_key_with_key(text, text, text)`.execute(db);
  await sql`drop function if exists mint_api_key(text, text, text, text, text, text[], text[], text[], cidr[], timestamptz, text, integer, text, integer[])`.execute(
    db,
  );
  await sql`
    alter table api_keys
      drop constraint api_keys_rules_bounded, drop constraint api_keys_scopes_known,
      drop column expires_at, drop column allowed_ips, drop column allowed_kinds, drop column allowed_models, drop column scopes`.execute(db);
}
