import pytest
from django.core.management import CommandError, call_command

from accounts.models import Account
from billing.selectors import account_balance


@pytest.mark.django_db
def test_it_creates_an_account_with_ten_free_minutes_and_prints_the_token_last(client, capsys):
    call_command("create_account", "carol@example.com")
    token = capsys.readouterr().out.strip().splitlines()[-1]
    account = Account.objects.get(user__email="carol@example.com")
    assert account_balance(account.pk) == 600
    response = client.get(
        "/v1/api/transcription/00000000-0000-0000-0000-000000000000", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 404


@pytest.mark.django_db
def test_minutes_can_be_given(capsys):
    call_command("create_account", "dan@example.com", "--minutes", "120")
    assert account_balance(Account.objects.get(user__email="dan@example.com").pk) == 120 * 60


@pytest.mark.django_db
def test_an_existing_email_is_refused(account):
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_account", account.email)
