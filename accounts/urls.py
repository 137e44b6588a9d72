from django.contrib.auth import views as auth_views
from django.urls import path

from . import password_views, views
from .forms import EmailAuthenticationForm

app_name = "accounts"

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("confirm/<str:uid>/<str:token>/", views.confirm_email, name="confirm"),
    path(
        "login/",
        auth_views.LoginView.as_view(authentication_form=EmailAuthenticationForm, redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/reset/", password_views.PasswordResetRequestView.as_view(), name="password-reset"),
    path("password/reset/sent/", password_views.PasswordResetSentView.as_view(), name="password-reset-sent"),
    path("password/reset/done/", password_views.PasswordResetCompleteView.as_view(), name="password-reset-complete"),
    path(
        "password/reset/<uidb64>/<token>/",
        password_views.PasswordResetConfirmView.as_view(),
        name="password-reset-confirm",
    ),
    path("password/change/", password_views.PasswordChangeView.as_view(), name="password-change"),
    path("api/", views.api_page, name="api"),
    path("api/token/", views.token_create, name="token-create"),
    path("api/token/replace/", views.token_replace, name="token-replace"),
    path("api/token/revoke/", views.token_revoke_view, name="token-revoke"),
]
